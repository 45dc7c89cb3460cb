package peers

import "slices"

// StoredAgreement is the agreement over the kept observations of server that the store
// holds on disk, those read out of a mirror left out: what it reads back after a restart,
// before the node gives it the mirrored ones again.
func (s *Store) StoredAgreement(server string) Agreement {
	return agree(slices.DeleteFunc(s.kept(server), func(k summary) bool { return k.Mirrored }))
}
