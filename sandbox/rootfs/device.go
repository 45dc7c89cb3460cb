package rootfs

import (
	"io/fs"
	"syscall"
)

// deviceNumbers returns a device file's major and minor numbers, decoded as
// Linux encodes them (glibc's gnu_dev_major/gnu_dev_minor).
func deviceNumbers(fi fs.FileInfo) (int64, int64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	dev := uint64(st.Rdev) //nolint:unconvert // Rdev's type differs between architectures
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	return int64(major), int64(minor)
}
