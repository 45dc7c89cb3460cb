package observer

import (
	"path/filepath"
	"testing"
)

func TestHostConfig(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/cache")
	cfg, err := Host{NPMRegistry: "http://n", PyPIIndex: "http://i/simple/", WorkBytes: 5}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.WorkDir != filepath.Join("/cache", "histor", "sandbox", "work") || cfg.InstallCache != "/cache/histor/sandbox/installs" ||
		cfg.RootfsDir != "/cache/histor/rootfs" || cfg.NPMRegistry != "http://n" || cfg.PyPIIndex != "http://i/simple/" || cfg.WorkBytes != 5 {
		t.Errorf("defaults: %+v", cfg)
	}
	cfg, err = Host{Dir: "/d", RootfsDir: "/r", NoInstallCache: true}.Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.WorkDir != "/d/work" || cfg.InstallCache != "" || cfg.RootfsDir != "/r" {
		t.Errorf("set: %+v", cfg)
	}
}
