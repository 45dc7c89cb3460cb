package node

import (
	"fmt"
	"net"

	"github.com/histor-observer/histor/node/mcpface"
)

// observeOwnFace makes the crawler observe the face served on addr.
func (n *Node) observeOwnFace(addr net.Addr) error {
	t, err := mcpface.Target(n.cfg.LogOrigin, addr)
	if err != nil {
		return err
	}
	n.mu.Lock()
	cr := n.cr
	n.mu.Unlock()
	if cr == nil {
		return fmt.Errorf("observing own face: crawler not open")
	}
	return cr.SetSelf(t)
}
