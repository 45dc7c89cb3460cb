package mtl

import "testing"

func BenchmarkDigestListResult(b *testing.B) {
	in := readVector(b, "pass-01-tools.json")
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := DigestListResult(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDescriptorSubject(b *testing.B) {
	d := Descriptor{
		Server:   Server{Name: "com.example/weather", Registry: "urn:awr:mtl:1:registry:example"},
		ToolSet:  ToolSet{Count: 2, Names: []string{"get_weather", "list_cities"}, DigestSRI: "sha256-9+Gp1Oq15KPBAAGmFucoVwSQ/PUzwLt1CRxesSUvX5c="},
		Artifact: Artifact{Transport: "streamable-http", Endpoint: "https://weather.example.com/mcp"},
	}
	for b.Loop() {
		if _, _, err := d.Subject(); err != nil {
			b.Fatal(err)
		}
	}
}
