// Package rootfs builds the root filesystems packages run on, from Debian
// packages with mmdebstrap, and names each by a digest of its contents.
//
// A root is read-only at run time: the package, HOME, /tmp and resolv.conf
// come in as mounts, over empty mount points Build adds. The digest is
// SHA-256 over a tar stream written in Go with every timestamp and owner
// zeroed and entries in name order, so it names what the root holds and
// not when or by whom it was built; the manifest beside it says which file
// a change is in, and the dpkg list says which package versions it holds.
// A mirror serving newer versions gives a new digest, which is the point:
// the observation records what actually ran.
package rootfs
