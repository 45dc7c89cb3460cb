package node

import (
	"math"
	"net/http/httptest"
	"testing"
)

func TestParseTilePath(t *testing.T) {
	good := []struct {
		in   string
		want tilePath
	}{
		{"0/000", tilePath{level: 0, index: 0, width: 256}},
		{"0/067", tilePath{index: 67, width: 256}},
		{"1/x001/x234/067", tilePath{level: 1, index: 1234067, width: 256}},
		{"63/999", tilePath{level: 63, index: 999, width: 256}},
		{"2/001.p/5", tilePath{level: 2, index: 1, width: 5}},
		{"0/x001/000.p/255", tilePath{index: 1000, width: 255}},
		{"entries/x001/x234/067", tilePath{entries: true, index: 1234067, width: 256}},
		{"entries/000.p/1", tilePath{entries: true, width: 1}},
		{"0/x018/x446/x744/x073/x709/x551/615", tilePath{index: math.MaxUint64, width: 256}},
	}
	for _, c := range good {
		got, err := parseTilePath(c.in)
		if err != nil || got != c.want {
			t.Errorf("parseTilePath(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	bad := []string{
		"", "0", "0/", "00/000", "01/000", "64/000", "-1/000", "a/000", "entries",
		"0/67", "0/0067", "0/x067", "0/067/", "0/x000/067", "0/x1/067", "0/y001/067",
		"0/x001/x234/67", "0/000.p/0", "0/000.p/256", "0/000.p/05", "0/000.p/", "0/000.p/1/",
		"0/000.p", "0/000.q/1", "0/x018/x446/x744/x073/x709/x551/616", // overflows uint64
		"0/x001/x000/x000/x000/x000/x000/x000/000", // eight elements
		"entries/67", "entries/000.p/256", "tiles/000", "0/+01", "0/0x1",
	}
	for _, in := range bad {
		if got, err := parseTilePath(in); err == nil {
			t.Errorf("parseTilePath(%q) = %+v, want an error", in, got)
		}
	}
}

func TestAcceptsGzip(t *testing.T) {
	for v, want := range map[string]bool{
		"": false, "gzip": true, "identity, gzip": true, "GZip;q=0.5": true, "gzip;q=0": false, "br": false, "x-gzip": false,
		// RFC 9110 §12.4.2: a qvalue of zero, however spelled, means "not acceptable".
		"gzip;q=0.0": false, "gzip; q=0.000": false, "gzip;Q=0": false, "gzip;q=0.001": true,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		if v != "" {
			r.Header.Set("Accept-Encoding", v)
		}
		if got := acceptsGzip(r); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", v, got, want)
		}
	}
}

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
