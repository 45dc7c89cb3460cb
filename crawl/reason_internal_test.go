package crawl

import (
	"fmt"
	"strings"
	"testing"

	"github.com/histor-observer/histor/log/awr"
)

// TestReasonDetailClipMakesNoForbiddenWord: a refusal quoting a tool name
// that holds "safety" past the clip point must not become "…safe…" once
// clipped, or every label of the target would be refused.
func TestReasonDetailClipMakesNoForbiddenWord(t *testing.T) {
	for _, n := range []int{150, 171, 172, 180, 190} {
		detail := fmt.Sprintf("duplicate tool name %q", strings.Repeat("a", n)+" safety-check-tool")
		got := reasonDetail(detail, "MTL-SUBJ-003")
		if w := awr.ForbiddenWord(got); w != "" {
			t.Errorf("name of %d+ bytes: detail %q carries %q", n, got, w)
		}
		if len(got) > MaxReasonDetailBytes {
			t.Errorf("detail of %d bytes", len(got))
		}
	}
}
