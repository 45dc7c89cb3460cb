package federation

import (
	"errors"
	"fmt"
	"slices"

	"github.com/histor-observer/histor/gossip"
	"github.com/histor-observer/histor/log/format"
	"github.com/histor-observer/histor/witness/submit"
)

// Reload reads the members file again, with every descriptor file it and Peers name,
// and makes the open federation what they say, without a restart: gossip dials the
// peers that joined and drops the ones that left, the peer view counts the observers that
// joined (at once from what this node's mirror of them already holds) and no longer those
// that left, the witness witnesses the new peers' logs, the mirror follows them, and each
// new descriptor peer's witness is sent this log's checkpoints. On an error (a line or a
// descriptor that does not parse, a bound) nothing changes and the error says why. The
// host calls it under the lock it opens and closes the parts under.
func (f *Federation) Reload() error {
	err := f.reload()
	result := "applied"
	if err != nil {
		result = "refused"
		f.logger.Error("members file not reloaded; the members stay as they were", "file", f.cfg.Members.MembersFile, "err", err)
	}
	f.metrics.reloads.WithLabelValues(result).Inc()
	return err
}

func (f *Federation) reload() error {
	if f.cfg.Members.MembersFile == "" {
		return errors.New("reloading members: no members file is configured")
	}
	if !f.open {
		return errors.New("reloading members: the node is not open")
	}
	fed, err := ParseSettings(f.cfg.Members)
	if err != nil {
		return fmt.Errorf("reloading members: %w", err)
	}
	old := f.settings.Load()
	if err := f.checkReload(fed); err != nil {
		return fmt.Errorf("reloading members: %w", err)
	}
	if g := f.gos.Load(); g != nil {
		var peers []gossip.Peer
		for _, p := range fed.peers {
			peers = append(peers, p.gp)
		}
		if err := g.SetMembers(fed.allow, peers); err != nil {
			return fmt.Errorf("reloading members: %w", err)
		}
	}
	// From here on each step is applied even when one fails, so that no part is left on
	// the old members while another has the new ones; the errors are reported together.
	var errs []error
	if view := f.peers.Load(); view != nil {
		errs = append(errs, view.SetAllowList(fed.allow))
	}
	for _, p := range fed.peers {
		if p.desc != nil {
			v, err := format.NewVerifier(p.desc.Origin, p.pub)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			f.witnessPeer(v)
		}
	}
	f.settings.Store(fed)
	joined := slices.DeleteFunc(f.counted(fed), func(did string) bool { return slices.Contains(old.allow, did) })
	if m := f.mirror.Load(); m != nil {
		errs = append(errs, f.follow(m, fed))
		f.setMirrorURLs(fed, f.cfg.MirrorURLs)
		errs = append(errs, f.loadMirrored(joined))
	}
	for _, did := range joined {
		f.wantMirror(did)
	}
	errs = append(errs, f.resetSubmitter(old, fed))
	f.metrics.members.Set(float64(len(f.counted(fed))))
	f.logger.Info("members reloaded", "file", f.cfg.Members.MembersFile, "peers", len(fed.peers), "observers", len(f.counted(fed)), "joined", len(joined),
		"left", len(slices.DeleteFunc(slices.Clone(old.allow), func(did string) bool { return slices.Contains(fed.allow, did) })))
	return errors.Join(errs...)
}

// checkReload refuses what a reload cannot apply to a running witness: one origin under
// two keys. A new peer's log joins the witness; an old one stays witnessed.
func (f *Federation) checkReload(fed *Settings) error {
	for origin, v := range fed.logs {
		if have := f.verifier(origin); have != nil && have.KeyHash() != v.KeyHash() {
			return fmt.Errorf("log %q is named with another key than the witness holds", origin)
		}
	}
	return nil
}

// resetSubmitter makes a new submitter when the witnesses to submit to changed, and closes
// the old one; the head loop submits the latest checkpoint to the new one at once.
func (f *Federation) resetSubmitter(old, fed *Settings) error {
	was, _ := f.witnessTargets(old)
	now, _ := f.witnessTargets(fed)
	if slices.EqualFunc(was, now, sameWitness) {
		return nil
	}
	// The old one goes first: the new one registers the same metrics.
	var errs []error
	if prev := f.sub.Swap(nil); prev != nil {
		errs = append(errs, prev.Close())
	}
	s, policy, err := f.newSubmitter(fed)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("making the witness submitter: %w", err))...)
	}
	f.policy.Store(policy)
	f.sub.Store(s)
	signal(f.ownHead)
	return errors.Join(errs...)
}

func sameWitness(a, b submit.Witness) bool {
	return a.URL == b.URL && a.Cosigner.Name == b.Cosigner.Name && a.Cosigner.Key.Equal(b.Cosigner.Key)
}
