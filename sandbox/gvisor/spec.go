package gvisor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The subset of the OCI runtime spec (config.md, config-linux.md) a run
// uses. Written by hand: a handful of members, no dependency.
type ociSpec struct {
	OCIVersion string     `json:"ociVersion"`
	Process    ociProcess `json:"process"`
	Root       ociRoot    `json:"root"`
	Hostname   string     `json:"hostname"`
	Mounts     []ociMount `json:"mounts"`
	Linux      ociLinux   `json:"linux"`
}

type ociProcess struct {
	User            ociUser   `json:"user"`
	Args            []string  `json:"args"`
	Env             []string  `json:"env"`
	Cwd             string    `json:"cwd"`
	Capabilities    ociCaps   `json:"capabilities"`
	Rlimits         []ociRlim `json:"rlimits"`
	NoNewPrivileges bool      `json:"noNewPrivileges"`
}

type ociUser struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

// ociCaps are all empty, written out so nothing falls back to a default set.
type ociCaps struct {
	Bounding    []string `json:"bounding"`
	Effective   []string `json:"effective"`
	Inheritable []string `json:"inheritable"`
	Permitted   []string `json:"permitted"`
	Ambient     []string `json:"ambient"`
}

type ociRlim struct {
	Type string `json:"type"`
	Hard uint64 `json:"hard"`
	Soft uint64 `json:"soft"`
}

type ociRoot struct {
	Path     string `json:"path"`
	Readonly bool   `json:"readonly"`
}

type ociMount struct {
	Destination string   `json:"destination"`
	Type        string   `json:"type"`
	Source      string   `json:"source"`
	Options     []string `json:"options,omitempty"`
}

type ociLinux struct {
	Namespaces  []ociNamespace `json:"namespaces"`
	Resources   ociResources   `json:"resources"`
	CgroupsPath string         `json:"cgroupsPath"`
}

type ociNamespace struct {
	Type string `json:"type"`
	Path string `json:"path,omitempty"`
}

type ociResources struct {
	Memory ociMemory `json:"memory"`
	CPU    ociCPU    `json:"cpu"`
	Pids   ociPids   `json:"pids"`
}

type ociMemory struct {
	Limit int64 `json:"limit"`
	Swap  int64 `json:"swap"` // memory+swap: equal to Limit means no swap
}

type ociCPU struct {
	Quota  int64  `json:"quota"`
	Period uint64 `json:"period"`
}

type ociPids struct {
	Limit int64 `json:"limit"`
}

const cpuPeriod = 100_000 // µs

// spec builds the bundle configuration of r.
func (r *Run) spec() ociSpec {
	l := r.Limits.withDefaults()
	tmp := r.TmpBytes
	if tmp == 0 {
		tmp = 64 << 20
	}
	cwd := r.Cwd
	if cwd == "" {
		cwd = "/"
	}
	none := []string{}
	return ociSpec{
		OCIVersion: "1.0.2",
		Process: ociProcess{
			User: ociUser{UID: r.UID, GID: r.GID}, Args: r.Args, Env: r.env(), Cwd: cwd,
			Capabilities: ociCaps{none, none, none, none, none},
			Rlimits: []ociRlim{{Type: "RLIMIT_NOFILE", Hard: l.OpenFiles, Soft: l.OpenFiles},
				{Type: "RLIMIT_CORE", Hard: 0, Soft: 0}},
			NoNewPrivileges: true,
		},
		Root:     ociRoot{Path: r.Root, Readonly: true},
		Hostname: "sandbox",
		Mounts:   r.mounts(tmp),
		Linux: ociLinux{
			Namespaces: r.namespaces(),
			Resources: ociResources{
				Memory: ociMemory{Limit: l.MemoryBytes, Swap: l.MemoryBytes},
				CPU:    ociCPU{Quota: int64(l.CPUs * cpuPeriod), Period: cpuPeriod},
				Pids:   ociPids{Limit: l.Pids},
			},
			CgroupsPath: cgroupsPath(r.ID),
		},
	}
}

func (r *Run) env() []string {
	env := slices.Clone(r.Env)
	has := func(k string) bool {
		return slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, k+"=") })
	}
	if !has("PATH") {
		env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin")
	}
	if !has("HOME") {
		env = append(env, "HOME=/tmp")
	}
	return env
}

func (r *Run) mounts(tmp int64) []ociMount {
	ms := []ociMount{
		{Destination: "/proc", Type: "proc", Source: "proc"},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "noexec", "mode=755", "size=1m"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs",
			Options: []string{"nosuid", "nodev", fmt.Sprintf("size=%d", tmp), "mode=1777"}},
	}
	for _, m := range r.Mounts {
		mode := "ro"
		if m.Writable {
			mode = "rw"
		}
		ms = append(ms, ociMount{Destination: m.Destination, Type: "bind", Source: m.Source,
			Options: []string{"rbind", mode, "nosuid", "nodev"}})
	}
	return ms
}

func (r *Run) namespaces() []ociNamespace {
	return []ociNamespace{{Type: "pid"}, {Type: "ipc"}, {Type: "uts"}, {Type: "mount"},
		{Type: "network", Path: r.NetNS}}
}

// writeBundle writes config.json into a fresh bundle directory.
func (r *Run) writeBundle(dir string) error {
	b, err := json.MarshalIndent(r.spec(), "", "  ")
	if err != nil {
		return fmt.Errorf("encoding bundle config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		return fmt.Errorf("writing bundle config: %w", err)
	}
	return nil
}
