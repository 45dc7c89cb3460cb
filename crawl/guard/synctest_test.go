package guard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// pipeNet is an in-memory network for a synctest bubble, where real sockets
// do not work: every dial makes a net.Pipe and hands the server end to the
// listener.
type pipeNet struct {
	conns  chan net.Conn
	done   chan struct{}
	once   sync.Once
	dialed atomic.Int32
}

func newPipeNet() *pipeNet { return &pipeNet{conns: make(chan net.Conn), done: make(chan struct{})} }

func (p *pipeNet) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case p.conns <- server:
		p.dialed.Add(1)
		return client, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *pipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.done:
		return nil, net.ErrClosed
	}
}

func (p *pipeNet) Close() error   { p.once.Do(func() { close(p.done) }); return nil }
func (p *pipeNet) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }

// TestThirdConnectionWaitsSynctest: with two requests to one host held in
// the handler, a third opens no connection and waits for a slot; once every
// goroutine is blocked (synctest.Wait) that is a fact, not a hope after a
// sleep. Releasing one request lets the third through on a freed slot.
func TestThirdConnectionWaitsSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pn := newPipeNet()
		release := make(chan struct{})
		var held atomic.Int32
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			held.Add(1)
			select {
			case <-release:
			case <-r.Context().Done():
			}
			held.Add(-1)
			io.WriteString(w, "done")
		})}
		go srv.Serve(pn)
		g := newGuard(t, Config{AllowPrivate: true, Resolver: &fakeResolver{table: map[string][]string{"a.test": {"127.0.0.1"}}}})
		g.dial = pn.dial
		errs := make(chan error, 3)
		for range 3 {
			go func() {
				ctx := context.Background()
				if _, err := g.Check(ctx, "http://a.test/hold"); err != nil {
					errs <- err
					return
				}
				errs <- get(ctx, g, "http://a.test/hold")
			}()
		}
		synctest.Wait()
		if h, d, n := held.Load(), pn.dialed.Load(), g.limit.inUse("a.test"); h != 2 || d != 2 || n != 2 {
			t.Fatalf("with everything blocked: %d held, %d dialled, %d slots in use; want 2 each", h, d, n)
		}
		release <- struct{}{}
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if h, n := held.Load(), g.limit.inUse("a.test"); h != 2 || n != 2 {
			t.Fatalf("after one release: %d held, %d slots in use; want 2 and 2", h, n)
		}
		close(release)
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if d := pn.dialed.Load(); d > 3 {
			t.Errorf("%d connections dialled for three requests", d)
		}
		g.Client().CloseIdleConnections()
		if err := srv.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			t.Fatal(err)
		}
	})
}
