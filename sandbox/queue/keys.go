package queue

import (
	"bytes"
	"fmt"
	"os"

	"github.com/nats-io/nkeys"
)

// CreateSeedFile makes a new worker NKey and writes its seed to path with
// mode 0600, refusing to replace an existing file. It returns the public
// key, the one to list in the node's Config.Workers.
func CreateSeedFile(path string) (string, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", fmt.Errorf("creating worker nkey: %w", err)
	}
	defer kp.Wipe()
	seed, err := kp.Seed()
	if err != nil {
		return "", fmt.Errorf("reading worker nkey seed: %w", err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return "", fmt.Errorf("reading worker nkey public key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("creating seed file: %w", err)
	}
	if _, err := f.Write(append(seed, '\n')); err != nil {
		f.Close()
		return "", fmt.Errorf("writing seed file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("writing seed file: %w", err)
	}
	return pub, nil
}

// LoadSeedFile reads a worker NKey seed written by CreateSeedFile. A file
// that group or others may read is refused: the seed is the worker's
// password.
func LoadSeedFile(path string) (nkeys.KeyPair, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("loading seed file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("loading seed file %s: mode %v, want 0600", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading seed file: %w", err)
	}
	kp, err := nkeys.FromSeed(bytes.TrimSpace(b))
	if err != nil {
		return nil, fmt.Errorf("parsing seed file %s: %w", path, err)
	}
	if pub, err := kp.PublicKey(); err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return nil, fmt.Errorf("seed file %s does not hold a user nkey", path)
	}
	return kp, nil
}
