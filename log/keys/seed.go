package keys

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/crypto/hkdf"
)

// SeedSize is the length of a node seed in bytes.
const SeedSize = 32

// HKDF info labels, one per purpose. They are part of the key derivation:
// changing one changes the key (and the node's identity) for that purpose.
const (
	LabelLogSigning       = "histor/v1 log-signing"
	LabelWitnessCosigning = "histor/v1 witness-cosigning"
	LabelP2PIdentity      = "histor/v1 libp2p-identity"
	LabelAIMarketProvider = "histor/v1 aimarket-provider"
)

// Seed is a node's root secret. Its zero value is not usable; get one from
// Generate, Load or NewSeed.
type Seed struct {
	b [SeedSize]byte
}

// NewSeed wraps raw seed bytes, which must be exactly SeedSize long. It is
// for tests and tools that hold a seed outside a file.
func NewSeed(b []byte) (*Seed, error) {
	if len(b) != SeedSize {
		return nil, fmt.Errorf("making seed: got %d bytes, want %d", len(b), SeedSize)
	}
	s := &Seed{}
	copy(s.b[:], b)
	return s, nil
}

// Generate writes a fresh random seed to path with mode 0600 and returns it.
// It refuses to replace an existing file: overwriting a seed silently gives
// the node a new identity and orphans its log.
func Generate(path string) (*Seed, error) {
	s := &Seed{}
	if _, err := io.ReadFull(rand.Reader, s.b[:]); err != nil {
		return nil, fmt.Errorf("generating seed: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, &FileError{Path: path, Problem: ProblemExists}
	}
	if err != nil {
		return nil, fmt.Errorf("creating seed file: %w", err)
	}
	if err := writeSynced(f, s.b[:]); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("writing seed file %s: %w", path, err)
	}
	return s, nil
}

// writeSynced writes b, syncs and closes f, so a seed reported as written
// survives a crash.
func writeSynced(f *os.File, b []byte) error {
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Load reads a seed file. It refuses anything but a regular file of exactly
// SeedSize bytes that neither group nor others can read or write, reporting
// which with a *FileError.
func Load(path string) (*Seed, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("loading seed: %w", err)
	}
	if err := checkInfo(path, info); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("loading seed: %w", err)
	}
	defer f.Close()
	// Check the opened file too: the path could have been swapped between
	// Lstat and Open.
	opened, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("loading seed: %w", err)
	}
	if err := checkInfo(path, opened); err != nil {
		return nil, err
	}
	buf := make([]byte, SeedSize+1)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading seed file %s: %w", path, err)
	}
	if n != SeedSize {
		return nil, &FileError{Path: path, Problem: ProblemSize, Size: opened.Size()}
	}
	return NewSeed(buf[:n])
}

// checkInfo applies the file-kind, mode and size rules to info.
func checkInfo(path string, info fs.FileInfo) error {
	if !info.Mode().IsRegular() {
		return &FileError{Path: path, Problem: ProblemNotRegular, Mode: info.Mode()}
	}
	if info.Mode().Perm()&0o077 != 0 {
		return &FileError{Path: path, Problem: ProblemMode, Mode: info.Mode()}
	}
	if info.Size() != SeedSize {
		return &FileError{Path: path, Problem: ProblemSize, Size: info.Size()}
	}
	return nil
}

// LogKey is the key that signs labels, histor.sth/v1 heads and C2SP
// checkpoints; its did:key is the node's issuer identity.
func (s *Seed) LogKey() ed25519.PrivateKey { return s.Derive(LabelLogSigning) }

// WitnessKey is the key that cosigns other logs' checkpoints
// (cosignature/v1).
func (s *Seed) WitnessKey() ed25519.PrivateKey { return s.Derive(LabelWitnessCosigning) }

// P2PKey is the node's libp2p host identity.
func (s *Seed) P2PKey() ed25519.PrivateKey { return s.Derive(LabelP2PIdentity) }

// AIMarketKey signs the node's AIMarket peer documents, answers and interop
// receipts; as in HISTOR, it is not the label issuer's key.
func (s *Seed) AIMarketKey() ed25519.PrivateKey { return s.Derive(LabelAIMarketProvider) }

// Derive returns the Ed25519 key for one purpose: HKDF-SHA256 with the seed
// as input keying material, no salt, and label as info, expanded to an
// Ed25519 seed. Use the Label constants; a new purpose needs a new label.
func (s *Seed) Derive(label string) ed25519.PrivateKey {
	r := hkdf.New(sha256.New, s.b[:], nil, []byte(label))
	var k [ed25519.SeedSize]byte
	if _, err := io.ReadFull(r, k[:]); err != nil {
		// HKDF-SHA256 can produce 255*32 bytes; 32 never fails.
		panic("keys: hkdf expand: " + err.Error())
	}
	return ed25519.NewKeyFromSeed(k[:])
}
