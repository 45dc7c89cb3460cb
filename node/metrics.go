package node

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/histor-observer/histor/internal/httpx"
	"github.com/histor-observer/histor/internal/promset"
)

// noRoute is the route label of a request no route matched: the raw path
// is never a label, or any client could grow the series without bound.
const noRoute = "none"

// httpMetrics are the API's histor_http_* series, labelled by route
// pattern, never by raw path.
type httpMetrics struct {
	requests *prometheus.CounterVec   // route, code
	latency  *prometheus.HistogramVec // route
	inFlight prometheus.Gauge

	set *promset.Set // the series registered now, with the node's own; nil: none
}

// newHTTPMetrics builds the API's series, registered nowhere yet: the node
// counts requests from New on, and registers them while it is open.
func newHTTPMetrics() *httpMetrics {
	return &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "histor_http_requests_total",
			Help: "HTTP requests answered, by route pattern and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "histor_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "histor_http_requests_in_flight",
			Help: "HTTP requests being answered now, including those refused as busy.",
		}),
	}
}

// register registers the API's series with own (strictly: a node of the
// same origin already open on the registry is refused) and the Go runtime
// and process collectors with runtime, unless it holds them already: they
// describe the process, which every node in it shares.
func (m *httpMetrics) register(own, runtime prometheus.Registerer, more ...prometheus.Collector) error {
	set, err := promset.Register(own, "metrics", append([]prometheus.Collector{m.requests, m.latency, m.inFlight}, more...)...)
	if err != nil {
		return err
	}
	m.set = set
	for _, c := range []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		var are prometheus.AlreadyRegisteredError
		if err := runtime.Register(c); err != nil && !errors.As(err, &are) {
			m.unregister()
			return fmt.Errorf("registering runtime metrics: %w", err)
		}
	}
	return nil
}

// unregister removes the API's series from the registry; the Go and
// process collectors stay, for the other nodes of the process.
func (m *httpMetrics) unregister() {
	m.set.Unregister()
	m.set = nil
}

// observe counts one answered request.
func (m *httpMetrics) observe(rt *httpx.Match, code int, d time.Duration) {
	route := noRoute
	if rt != nil {
		route = rt.Pattern
	}
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

// handler serves reg in the Prometheus exposition formats.
func (m *httpMetrics) handler(reg *prometheus.Registry, logger *slog.Logger) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		ErrorHandling:     promhttp.ContinueOnError,
		Registry:          reg,
		EnableOpenMetrics: false,
	})
}

// storesCollector is what the node's stores say of themselves: histor_store_stopped{store},
// 1 for each store besides the log (histor_log_stopped) whose writes a failed one stopped,
// 0 for each that takes writes, as /health reads it; and histor_store_pebble_bytes{store,
// kind}, each store's Pebble block cache ("cache") and live WAL ("unflushed": what its
// memtables hold), and histor_store_pebble_memtable_bytes{store}, the memtable arenas it
// allocated, which Pebble allocates outside the Go heap when built with cgo. Nothing while
// the node is not open.
type storesCollector struct {
	api                        *atomic.Pointer[api]
	stopped, memory, memtables *prometheus.Desc
}

func newStoresCollector(a *atomic.Pointer[api]) storesCollector {
	return storesCollector{api: a,
		stopped: prometheus.NewDesc("histor_store_stopped",
			"1 once a failed write (a full or failing disk) stopped the store's writes until the node restarts, else 0; the log's is histor_log_stopped.",
			[]string{"store"}, nil),
		memory: prometheus.NewDesc("histor_store_pebble_bytes",
			"Bytes the store's Pebble holds in memory, outside the Go heap when built with cgo: its block cache (kind cache) and its live WAL, which the memtables hold until flushed (kind unflushed).",
			[]string{"store", "kind"}, nil),
		memtables: prometheus.NewDesc("histor_store_pebble_memtable_bytes",
			"Bytes of the memtable arenas the store's Pebble has allocated, outside the Go heap when built with cgo: a flushed one it keeps (for reuse, or while a read holds it) among them. A full arena stays resident after its flush, which the unflushed bytes no longer show.",
			[]string{"store"}, nil)}
}

func (c storesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.stopped
	ch <- c.memory
	ch <- c.memtables
}

func (c storesCollector) Collect(ch chan<- prometheus.Metric) {
	a := c.api.Load()
	if a == nil || a.stores == nil {
		return
	}
	for name, s := range a.stores() {
		if name != "log" {
			v := 0.0
			if s.Stopped() != nil {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.stopped, prometheus.GaugeValue, v, name)
		}
		m := s.PebbleMemory()
		ch <- prometheus.MustNewConstMetric(c.memory, prometheus.GaugeValue, float64(m.Cache), name, "cache")
		ch <- prometheus.MustNewConstMetric(c.memory, prometheus.GaugeValue, float64(m.Unflushed), name, "unflushed")
		ch <- prometheus.MustNewConstMetric(c.memtables, prometheus.GaugeValue, float64(m.Memtables), name)
	}
}
