package node

import "testing"

func TestConfigValidate(t *testing.T) {
	c := Config{DataDir: t.TempDir()}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.LogOrigin != DefaultLogOrigin || c.WitnessName != "histor.local/witness" || c.MaxEntries != 1000 ||
		c.SeedFile == "" || c.HTTPAddr != DefaultHTTPAddr || c.Logger == nil || c.MaxHeaderBytes != 16<<10 {
		t.Fatalf("defaults not applied: %+v", c)
	}
	bad := []func(*Config){
		func(c *Config) { c.DataDir = "" },
		func(c *Config) { c.LogOrigin = "has space" },
		func(c *Config) { c.LogOrigin = "a+b" },
		func(c *Config) { c.LogOrigin = "tab\there" },
		func(c *Config) { c.LogOrigin, c.WitnessName = "a.example/log", "a.example/log" },
		func(c *Config) { c.MaxEntries = 1001 },
		func(c *Config) { c.MaxEntries = -1 },
		func(c *Config) { c.ReadTimeout = -1 },
		func(c *Config) { c.MaxHeaderBytes = 100 },
		func(c *Config) { c.MaxHeaderBytes = 2 << 20 },
		func(c *Config) { c.CacheBytes = -1 },
		func(c *Config) { c.PublicURL = "ftp://x" },
		func(c *Config) { c.PublicURL = "https://x/?q=1" },
		func(c *Config) { c.PublicURL = "/relative" },
	}
	for i, mut := range bad {
		c := Config{DataDir: t.TempDir()}
		mut(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("case %d: Validate accepted %+v", i, c)
		}
	}
}
