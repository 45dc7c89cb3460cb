package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"time"

	"github.com/histor-observer/histor/log/canon"
)

// CensusType is the type of the signed behaviour census.
const CensusType = "histor.behaviour-census/v1"

// CensusFreshness is how long an observation counts as fresh, HISTOR's 48 h.
const CensusFreshness = 48 * time.Hour

// censusMethodology says what the numbers can and cannot mean.
const censusMethodology = "Latest observed version per distinct registry package. Incomplete and unobserved packages remain in the denominator. One canary call per selected tool is bounded coverage of one run, never an exhaustive account of what a package can do."

// CensusRow is one package target as the census reads it: its last run
// (nil when never observed) and the digest of that run's behaviour record.
type CensusRow struct {
	Package        string // npm:<name> or pypi:<name>, the target's endpoint
	Version        string
	LastObserved   time.Time // zero when never observed ok
	Observation    *Observation
	EvidenceSHA256 string // hex SHA-256 of the stored behaviour record
}

// Census builds the unsigned census over rows (one per package target;
// several targets naming one package count once, the freshest), as
// HISTOR's census does: a package is complete only if its last run was ok
// and its behaviour complete; every package stays in the denominator.
func Census(rows []CensusRow, issuer string, now time.Time) (map[string]any, error) {
	unique := map[string]CensusRow{}
	for _, r := range rows {
		if old, ok := unique[r.Package]; !ok || r.LastObserved.After(old.LastObserved) {
			unique[r.Package] = r
		}
	}
	keys := make([]string, 0, len(unique))
	for k := range unique {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	phases := map[string]map[string]any{}
	counts := map[string][2]int64{}
	var completed, stale, advertised, called int64
	manifest := make([]any, 0, len(keys))
	for _, k := range keys {
		r := unique[k]
		complete := r.Observation != nil && r.Observation.Status == StatusOK && r.Observation.Behaviour.Complete
		if complete {
			completed++
		}
		var age any
		fresh := false
		if !r.LastObserved.IsZero() {
			a := int64(now.Sub(r.LastObserved) / time.Second)
			age, fresh = a, a >= 0 && time.Duration(a)*time.Second <= CensusFreshness
		}
		if !fresh {
			stale++
		}
		for phase, ok := range phaseCompletion(r.Observation) {
			c := counts[phase]
			if ok {
				c[0]++
			} else {
				c[1]++
			}
			counts[phase] = c
		}
		var observer any
		if o := r.Observation; o != nil {
			advertised += int64(o.Calls.Total)
			called += int64(o.Calls.Successful)
			observer = o.Behaviour.Observer
		}
		var last any
		if !r.LastObserved.IsZero() {
			last = r.LastObserved.UTC().Format(time.RFC3339)
		}
		manifest = append(manifest, map[string]any{
			"package": k, "version": r.Version, "lastObserved": last, "complete": complete,
			"fresh": fresh, "ageSeconds": age, "observer": observer, "evidenceDigest": r.EvidenceSHA256,
		})
	}
	for _, p := range []string{"installScripts", "startup", "calls"} {
		phases[p] = map[string]any{"complete": counts[p][0], "incomplete": counts[p][1]}
	}
	mjcs, err := canon.Marshal(manifest)
	if err != nil {
		return nil, fmt.Errorf("canonicalising census manifest: %w", err)
	}
	sum := sha256.Sum256(mjcs)
	return map[string]any{
		"type": CensusType, "issuer": issuer, "generatedAt": now.UTC().Format(time.RFC3339),
		"targetRows": int64(len(rows)), "packages": int64(len(unique)), "completed": completed,
		"staleOrUnobserved": stale, "freshnessWindowSeconds": int64(CensusFreshness / time.Second),
		"incomplete": int64(len(unique)) - completed, "phases": phases,
		"toolsAdvertised": advertised, "toolsSuccessfullyCalled": called,
		"manifest": manifest, "manifestSha256": hex.EncodeToString(sum[:]), "methodology": censusMethodology,
	}, nil
}

// phaseCompletion says, per phase, whether the run completed it. A package
// without install scripts completes that phase (nothing to run), as HISTOR
// counts it; an unobserved package completes none.
func phaseCompletion(o *Observation) map[string]bool {
	if o == nil {
		return map[string]bool{"installScripts": false, "startup": false, "calls": false}
	}
	scripts := o.Install.Scripts == nil && o.Install.Status == "ok"
	if s := o.Install.Scripts; s != nil {
		scripts = s.Complete
	}
	return map[string]bool{"installScripts": scripts, "startup": o.Behaviour.Startup.Complete, "calls": o.Behaviour.Calls.Complete}
}
