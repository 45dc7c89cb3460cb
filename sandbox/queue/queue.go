package queue

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

// The names on the wire. Workers need JobsStream and JobsConsumer.
const (
	JobsStream     = "HISTOR_JOBS"
	JobsConsumer   = "workers"
	ResultsStream  = "HISTOR_RESULTS"
	jobsSubject    = "histor.jobs"
	resultsPrefix  = "histor.results."
	resultsNode    = "node"
	pendingBucket  = "histor_pending"
	maxDeliverSubj = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + JobsStream + "." + JobsConsumer
)

// ErrDuplicate is returned by Enqueue for a target already queued within
// the duplicate window.
var ErrDuplicate = errors.New("target already queued within the duplicate window")

// Queue is the node's side: it issues jobs and accepts results.
type Queue struct {
	cfg     Config
	log     *slog.Logger
	srv     *server.Server // nil when connected to an external cluster
	nc      *nats.Conn
	js      jetstream.JetStream
	jobs    jetstream.Stream
	workers jetstream.Consumer
	results jetstream.Consumer
	pending jetstream.KeyValue // job ID → Job, for every job issued and not yet answered
	m       *metrics
}

// Open starts the embedded server (or connects to cfg.URL) and creates the
// streams, consumers and pending-job bucket if they do not exist.
func Open(ctx context.Context, cfg Config) (*Queue, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	q := &Queue{cfg: cfg, log: cfg.Logger.With("component", "queue")}
	if err := q.connect(); err != nil {
		q.Close()
		return nil, err
	}
	if err := q.provision(ctx); err != nil {
		q.Close()
		return nil, err
	}
	m, err := newMetrics(cfg.Registry, q.depth)
	if err != nil {
		q.Close()
		return nil, err
	}
	q.m = m
	return q, nil
}

func (q *Queue) connect() error {
	if q.cfg.URL != "" {
		opts := append([]nats.Option{nats.Name("histor-node")}, q.cfg.NATSOptions...)
		nc, err := nats.Connect(q.cfg.URL, opts...)
		if err != nil {
			return fmt.Errorf("connecting to nats %s: %w", q.cfg.URL, err)
		}
		q.nc = nc
		return nil
	}
	// The node's own key lives only in memory and may connect only
	// in-process: no port ever accepts it.
	kp, err := nkeys.CreateUser()
	if err != nil {
		return fmt.Errorf("creating node nkey: %w", err)
	}
	pub, _ := kp.PublicKey()
	opts, err := q.serverOptions(pub)
	if err != nil {
		return err
	}
	if q.srv, err = startServer(opts, q.log); err != nil {
		return err
	}
	nc, err := nats.Connect("", nats.InProcessServer(q.srv), nats.Name("histor-node"),
		nats.Nkey(pub, kp.Sign), nats.MaxReconnects(-1))
	if err != nil {
		return fmt.Errorf("connecting to the embedded nats server: %w", err)
	}
	q.nc = nc
	return nil
}

func (q *Queue) serverOptions(nodeKey string) (*server.Options, error) {
	c := q.cfg
	opts := &server.Options{
		ServerName:         "histor-node",
		JetStream:          true,
		StoreDir:           filepath.Join(c.DataDir, "queue"),
		JetStreamMaxStore:  c.MaxStore,
		JetStreamMaxMemory: c.MaxMemory,
		NoSigs:             true,
		MaxPayload:         int32(c.MaxResultBytes + 64<<10),
		DontListen:         len(c.Workers) == 0,
		TLSConfig:          c.TLS,
		TLSVerify:          c.TLSVerify,
		Nkeys: []*server.NkeyUser{{
			Nkey:                   nodeKey,
			AllowedConnectionTypes: map[string]struct{}{jwt.ConnectionTypeInProcess: {}},
		}},
	}
	if c.TLS != nil {
		opts.TLSTimeout = 2
	}
	if c.TLSVerify {
		// The server reads TLSVerify only when it builds the TLS config
		// itself; a config handed in must ask for the certificate.
		opts.TLSConfig = c.TLS.Clone()
		opts.TLSConfig.ClientAuth = tls.RequireAndVerifyClientCert
	}
	for _, w := range c.Workers {
		opts.Nkeys = append(opts.Nkeys, &server.NkeyUser{Nkey: w, Permissions: workerPermissions(w)})
	}
	if opts.DontListen {
		return opts, nil
	}
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return nil, fmt.Errorf("queue listen address %q: %w", c.Listen, err)
	}
	opts.Host = host
	if opts.Port, err = strconv.Atoi(port); err != nil {
		return nil, fmt.Errorf("queue listen port %q: %w", port, err)
	}
	if opts.Port == 0 { // Go's "any free port"; nats-server reads 0 as 4222
		opts.Port = server.RANDOM_PORT
	}
	return opts, nil
}

// workerPermissions lets worker w pull from the jobs consumer, ack what it
// got, ask the consumer's settings, publish results under its own key and
// receive on its own inbox. Nothing else: no stream, bucket or other
// worker's subjects.
func workerPermissions(w string) *server.Permissions {
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{
			"$JS.API.CONSUMER.MSG.NEXT." + JobsStream + "." + JobsConsumer,
			"$JS.API.CONSUMER.INFO." + JobsStream + "." + JobsConsumer,
			"$JS.ACK." + JobsStream + "." + JobsConsumer + ".>",
			resultsPrefix + w,
		}},
		Subscribe: &server.SubjectPermission{Allow: []string{inboxPrefix(w) + ".>"}},
	}
}

func inboxPrefix(w string) string { return "_INBOX." + w }

func startServer(opts *server.Options, log *slog.Logger) (*server.Server, error) {
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("creating the embedded nats server: %w", err)
	}
	s.SetLoggerV2(natsLogger{log}, false, false, false)
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		return nil, errors.New("starting the embedded nats server: not ready after 30s")
	}
	return s, nil
}

func (q *Queue) provision(ctx context.Context) error {
	js, err := jetstream.New(q.nc)
	if err != nil {
		return fmt.Errorf("opening jetstream: %w", err)
	}
	q.js = js
	c := q.cfg
	q.jobs, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: JobsStream, Subjects: []string{jobsSubject},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
		Duplicates: c.Duplicates, MaxMsgSize: 64 << 10,
	})
	if err != nil {
		return fmt.Errorf("creating the jobs stream: %w", err)
	}
	q.workers, err = js.CreateOrUpdateConsumer(ctx, JobsStream, jetstream.ConsumerConfig{
		Durable: JobsConsumer, FilterSubject: jobsSubject,
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: c.AckWait, MaxDeliver: c.MaxDeliver,
	})
	if err != nil {
		return fmt.Errorf("creating the jobs consumer: %w", err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: ResultsStream, Subjects: []string{resultsPrefix + ">"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
		Duplicates: 10 * time.Minute, MaxMsgSize: int32(c.MaxResultBytes),
	}); err != nil {
		return fmt.Errorf("creating the results stream: %w", err)
	}
	// The node retries a result its handler failed on for as long as it
	// takes: a result is never dropped for a storage hiccup.
	q.results, err = js.CreateOrUpdateConsumer(ctx, ResultsStream, jetstream.ConsumerConfig{
		Durable: resultsNode, AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("creating the results consumer: %w", err)
	}
	q.pending, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: pendingBucket, TTL: c.PendingTTL, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return fmt.Errorf("creating the pending-job bucket: %w", err)
	}
	return nil
}

// ClientURL is the URL workers connect to; empty when nothing listens.
func (q *Queue) ClientURL() string {
	if q.srv == nil {
		return q.cfg.URL
	}
	if len(q.cfg.Workers) == 0 {
		return ""
	}
	return q.srv.ClientURL() // tls:// when TLS is required
}

// Enqueue queues job, first recording it as pending so its result can be
// checked. A target already queued within the duplicate window returns
// ErrDuplicate and leaves nothing behind.
func (q *Queue) Enqueue(ctx context.Context, job Job) error {
	if err := job.check(); err != nil {
		return fmt.Errorf("enqueueing: %w", err)
	}
	data, err := json.Marshal(job)
	if err != nil {
		return fmt.Errorf("enqueueing %s: %w", job.Target, err)
	}
	if _, err := q.pending.Create(ctx, job.ID, data); err != nil {
		return fmt.Errorf("enqueueing %s: recording pending job: %w", job.Target, err)
	}
	ack, err := q.js.Publish(ctx, jobsSubject, data, jetstream.WithMsgID(job.Target))
	if err != nil || ack.Duplicate {
		if derr := q.pending.Delete(ctx, job.ID); derr != nil {
			q.log.Warn("forgetting an unqueued job", "job", job.ID, "err", derr)
		}
	}
	if err != nil {
		return fmt.Errorf("enqueueing %s: %w", job.Target, err)
	}
	if ack.Duplicate {
		return fmt.Errorf("enqueueing %s: %w", job.Target, ErrDuplicate)
	}
	q.m.enqueued.Inc()
	return nil
}

// depth is the number of jobs in the stream: queued, running or waiting
// for redelivery.
func (q *Queue) depth() float64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	info, err := q.jobs.Info(ctx)
	if err != nil {
		return 0
	}
	return float64(info.State.Msgs)
}

// Close closes the connection and shuts the embedded server down.
func (q *Queue) Close() error {
	if q.nc != nil {
		q.nc.Close()
	}
	if q.srv != nil {
		q.srv.Shutdown()
		q.srv.WaitForShutdown()
	}
	if q.m != nil {
		q.m.unregister()
	}
	return nil
}

// natsLogger sends the embedded server's log lines to slog.
type natsLogger struct{ log *slog.Logger }

func (l natsLogger) Noticef(f string, v ...any) { l.log.Debug(fmt.Sprintf(f, v...)) }
func (l natsLogger) Warnf(f string, v ...any)   { l.log.Warn(fmt.Sprintf(f, v...)) }
func (l natsLogger) Fatalf(f string, v ...any)  { l.log.Error(fmt.Sprintf(f, v...)) }
func (l natsLogger) Errorf(f string, v ...any)  { l.log.Error(fmt.Sprintf(f, v...)) }
func (l natsLogger) Debugf(f string, v ...any)  {}
func (l natsLogger) Tracef(f string, v ...any)  {}
