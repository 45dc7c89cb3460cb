package pkgs_test

import (
	"errors"
	"testing"

	"github.com/histor-observer/histor/sandbox/pkgs"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		in       string
		want     pkgs.Spec
		artifact string
		registry string
	}{
		{"npm:@modelcontextprotocol/server-memory@2026.8.31", pkgs.Spec{Kind: pkgs.NPM, Name: "@modelcontextprotocol/server-memory", Version: "2026.8.31"}, "npm:@modelcontextprotocol/server-memory@2026.8.31", "npm"},
		{"npm:@modelcontextprotocol/server-memory", pkgs.Spec{Kind: pkgs.NPM, Name: "@modelcontextprotocol/server-memory"}, "", "npm"},
		{"npm:left-pad@1.3.0", pkgs.Spec{Kind: pkgs.NPM, Name: "left-pad", Version: "1.3.0"}, "npm:left-pad@1.3.0", "npm"},
		{"npm:demo@next", pkgs.Spec{Kind: pkgs.NPM, Name: "demo", Version: "next"}, "npm:demo@next", "npm"},
		{"pypi:mcp-server-fetch==2025.4.7", pkgs.Spec{Kind: pkgs.PyPI, Name: "mcp-server-fetch", Version: "2025.4.7"}, "pypi:mcp-server-fetch==2025.4.7", "pypi"},
		{"pypi:Mcp_Server.Fetch", pkgs.Spec{Kind: pkgs.PyPI, Name: "mcp-server-fetch"}, "", "pypi"},
		{"pypi:Demo__X==1.0rc1", pkgs.Spec{Kind: pkgs.PyPI, Name: "demo-x", Version: "1.0rc1"}, "pypi:demo-x==1.0rc1", "pypi"},
		{"./dist/demo-1.0.0.tgz", pkgs.Spec{Kind: pkgs.NPM, File: "dist/demo-1.0.0.tgz"}, "", "local"},
		{"/srv/wheels/demo-1.0-py3-none-any.whl", pkgs.Spec{Kind: pkgs.PyPI, File: "/srv/wheels/demo-1.0-py3-none-any.whl"}, "", "local"},
	}
	for _, tt := range tests {
		got, err := pkgs.ParseSpec(tt.in)
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want || got.Artifact() != tt.artifact || got.Registry() != tt.registry {
			t.Errorf("ParseSpec(%q) = %+v artifact %q registry %q, want %+v %q %q", tt.in, got, got.Artifact(), got.Registry(), tt.want, tt.artifact, tt.registry)
		}
		if tt.artifact != "" {
			again, err := pkgs.ParseSpec(got.String())
			if err != nil || again != got {
				t.Errorf("ParseSpec(%q.String()) = %+v, %v", tt.in, again, err)
			}
		}
	}
}

func TestParseSpecRefuses(t *testing.T) {
	for _, in := range []string{
		"", "npm:", "npm:@", "npm:Left-Pad", "npm:left pad", "npm:../etc/passwd", "npm:a/b", "npm:@scope/",
		"npm:demo@", "npm:demo@1.0.0 --registry=x", "npm:demo@-1", "npm:demo@1.0.0/../x", "npm:.hidden",
		"pypi:", "pypi:-x", "pypi:x-", "pypi:a/b", "pypi:demo==", "pypi:demo==1.0;rm", "pypi:demo>=1.0",
		"cargo:serde", "left-pad", "http://example.invalid/x.tgz?", "-rf.tgz", "a\n.whl",
		"npm:" + string(make([]byte, 300)),
	} {
		_, err := pkgs.ParseSpec(in)
		var se *pkgs.SpecError
		if !errors.As(err, &se) {
			t.Errorf("ParseSpec(%q) = %v, want a *SpecError", in, err)
			continue
		}
		if pkgs.StatusOf(err) != "refused" {
			t.Errorf("StatusOf(ParseSpec(%q)) = %s, want refused", in, pkgs.StatusOf(err))
		}
	}
}
