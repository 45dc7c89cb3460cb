package node

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"time"
)

// operatorHeader carries the operator token, as in HISTOR.
const operatorHeader = "x-histor-operator"

// operatorToken is the SHA-256 of Config.OperatorToken. Comparing digests
// in constant time tells a caller nothing of the token, its length
// included.
type operatorToken struct {
	set    bool
	digest [32]byte
}

func newOperatorToken(token string) operatorToken {
	if token == "" {
		return operatorToken{}
	}
	return operatorToken{set: true, digest: sha256.Sum256([]byte(token))}
}

func (t operatorToken) matches(given string) bool {
	d := sha256.Sum256([]byte(given))
	return subtle.ConstantTimeCompare(d[:], t.digest[:]) == 1
}

// authorizeOperator answers 503 when no token is configured and 401 when the request
// lacks it, HISTOR's codes and details; it reports whether to go on.
func (a *api) authorizeOperator(w http.ResponseWriter, r *http.Request) bool {
	switch {
	case !a.operator.set:
		a.fail(w, http.StatusServiceUnavailable, "operator token not configured")
		return false
	case !a.operator.matches(r.Header.Get(operatorHeader)):
		a.fail(w, http.StatusUnauthorized, "operator token required")
		return false
	}
	return true
}

// serveAdminCrawl answers POST /api/v1/admin/crawl as HISTOR does: 202 with
// {"started":true,"runningSince":…} when a crawl starts in the background,
// 409 with started false and the running crawl's start when one is already
// running. The crawl runs in the node's crawl part and stops with the node.
func (a *api) serveAdminCrawl(w http.ResponseWriter, r *http.Request) {
	if !a.authorizeOperator(w, r) {
		return
	}
	if a.crawls == nil {
		a.fail(w, http.StatusServiceUnavailable, "no crawler")
		return
	}
	started, since := a.crawls.Start()
	var runningSince *string
	if !since.IsZero() {
		s := since.UTC().Format(time.RFC3339)
		runningSince = &s
	}
	body, err := json.Marshal(struct {
		Started      bool    `json:"started"`
		RunningSince *string `json:"runningSince"`
	}{started, runningSince})
	if err != nil {
		a.internal(w, r, "encoding crawl start", err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "application/json")
	if started {
		w.WriteHeader(http.StatusAccepted)
	} else {
		w.WriteHeader(http.StatusConflict)
	}
	w.Write(body)
}
