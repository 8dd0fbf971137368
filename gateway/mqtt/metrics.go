// The gateway's Prometheus metrics (issue 22, README.md "Metrics"): an
// optional HTTPS listener (metrics_listen; the gateway's own certificate)
// serving GET /metrics to HTTP basic auth checked against a password file
// that holds only a salted SHA-512, the auth service's format
// (plugins/module_utils/auth/metrics.py):
//
//	{"username": "prometheus", "salt": "<text>", "sha512": "<hex of sha512(salt + ':' + password)>"}
//
// Labels are bounded: every series carries space (the one space this
// process serves, from its configuration), and only fixed outcome and QoS
// values; never a client id, a user name or a topic.
package main

import (
	"bytes"
	"context"
	"crypto/sha512"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const metricsPrefix = "enmasse_mqtt_gateway_"

// Outcomes of a CONNECT (connections_total{outcome}).
const (
	connAccepted          = "accepted"
	connBadCredentials    = "bad_credentials"    // wrong password, unknown user (CONNACK 0x86 / 4)
	connNotAuthorized     = "not_authorized"     // no user name, or refused by the router (0x87 / 5)
	connQuotaExceeded     = "quota_exceeded"     // connections per user, router's resource limit (0x97)
	connServerUnavailable = "server_unavailable" // no router reachable (0x88 / 3)
)

// Outcomes of a publish (publishes_received_total{qos, outcome}).
const (
	pubAccepted = "accepted" // QoS 0 sent to the router, QoS 1 accepted by it
	pubRefused  = "refused"  // QoS 2, not an address, no send permission, not accepted by the router
	pubFailed   = "failed"   // not sent: the router connection failed
)

var (
	connOutcomes = []string{connAccepted, connBadCredentials, connNotAuthorized, connQuotaExceeded, connServerUnavailable}
	pubOutcomes  = []string{pubAccepted, pubRefused, pubFailed}
	qosValues    = []string{"0", "1", "2"}
)

// Metrics are the series of one gateway process (one space).
type Metrics struct {
	Registry      *prometheus.Registry
	connections   *prometheus.CounterVec
	publishes     *prometheus.CounterVec
	delivered     *prometheus.CounterVec
	subscriptions *prometheus.CounterVec
	retained      prometheus.Counter
}

// NewMetrics registers every series, at zero, with the label space;
// clients() and routerConnections() are read at each scrape (the connected
// clients gauge, the shared router connections gauge).
func NewMetrics(space string, clients, routerConnections func() int) *Metrics {
	reg := prometheus.NewRegistry()
	r := prometheus.WrapRegistererWith(prometheus.Labels{"space": space}, reg)
	m := &Metrics{Registry: reg,
		connections: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricsPrefix + "connections_total",
			Help: "MQTT CONNECTs by outcome (accepted, bad_credentials, not_authorized, quota_exceeded, server_unavailable)"},
			[]string{"outcome"}),
		publishes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricsPrefix + "publishes_received_total",
			Help: "PUBLISH packets from clients by QoS and outcome (accepted: QoS 0 sent / QoS 1 accepted by the router; refused; failed)"},
			[]string{"qos", "outcome"}),
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricsPrefix + "messages_delivered_total",
			Help: "PUBLISH packets written to subscribers (retained ones included) by QoS"},
			[]string{"qos"}),
		subscriptions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricsPrefix + "subscriptions_total",
			Help: "Subscription filters by outcome (accepted; refused: no address matches or no recv permission)"},
			[]string{"outcome"}),
		retained: prometheus.NewCounter(prometheus.CounterOpts{Name: metricsPrefix + "retained_stored_total",
			Help: "Retained messages stored (or cleared) in the space's retained queue"}),
	}
	for _, o := range connOutcomes {
		m.connections.WithLabelValues(o)
	}
	for _, q := range qosValues {
		for _, o := range pubOutcomes {
			m.publishes.WithLabelValues(q, o)
		}
		m.delivered.WithLabelValues(q)
	}
	for _, o := range []string{"accepted", "refused"} {
		m.subscriptions.WithLabelValues(o)
	}
	r.MustRegister(m.connections, m.publishes, m.delivered, m.subscriptions, m.retained,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: metricsPrefix + "connected_clients",
			Help: "MQTT clients connected now"},
			func() float64 { return float64(clients()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: metricsPrefix + "router_connections",
			Help: "AMQP connections to the router held now (each shared by up to clients_per_amqp_connection clients of one user; dialling ones included)"},
			func() float64 { return float64(routerConnections()) }),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector())
	return m
}

// The methods below accept a nil *Metrics (metrics off): the bridge calls
// them unconditionally.

func (m *Metrics) Connection(outcome string) {
	if m != nil {
		m.connections.WithLabelValues(outcome).Inc()
	}
}

// ConnectionRefused counts a refused CONNECT by its MQTT 5 reason code.
func (m *Metrics) ConnectionRefused(code packets.Code) {
	switch code.Code {
	case packets.ErrBadUsernameOrPassword.Code:
		m.Connection(connBadCredentials)
	case packets.ErrNotAuthorized.Code:
		m.Connection(connNotAuthorized)
	case packets.ErrQuotaExceeded.Code:
		m.Connection(connQuotaExceeded)
	default:
		m.Connection(connServerUnavailable)
	}
}

func qosLabel(q byte) string {
	if q > 2 {
		return "2" // not a valid QoS: mochi refuses the packet before
	}
	return qosValues[q]
}

func (m *Metrics) Publish(qos byte, outcome string) {
	if m != nil {
		m.publishes.WithLabelValues(qosLabel(qos), outcome).Inc()
	}
}

func (m *Metrics) Delivered(qos byte) {
	if m != nil {
		m.delivered.WithLabelValues(qosLabel(qos)).Inc()
	}
}

func (m *Metrics) Subscription(accepted bool) {
	if m == nil {
		return
	}
	if accepted {
		m.subscriptions.WithLabelValues("accepted").Inc()
	} else {
		m.subscriptions.WithLabelValues("refused").Inc()
	}
}

func (m *Metrics) Retained() {
	if m != nil {
		m.retained.Inc()
	}
}

// MetricsCredentials is the password file's content.
type MetricsCredentials struct {
	Username string `json:"username"`
	Salt     string `json:"salt"`
	SHA512   string `json:"sha512"`
}

// LoadMetricsCredentials reads the password file (mode 0640 or tighter);
// the error names the field and the rule, never the hash.
func LoadMetricsCredentials(path string) (*MetricsCredentials, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("metrics_password_file: %v", err)
	}
	if st.Mode().Perm()&0o007 != 0 {
		return nil, fmt.Errorf("metrics_password_file: %q has mode %04o: others must have no access (0640 or tighter)", path, st.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("metrics_password_file: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c MetricsCredentials
	if err := dec.Decode(&c); err != nil || c.Username == "" || c.Salt == "" || c.SHA512 == "" {
		return nil, fmt.Errorf("metrics_password_file: %q must be a JSON object with the non-empty strings username, salt, sha512", path)
	}
	c.SHA512 = strings.ToLower(c.SHA512)
	if b, err := hex.DecodeString(c.SHA512); err != nil || len(b) != sha512.Size {
		return nil, fmt.Errorf("metrics_password_file: %q: sha512 must be 128 hex digits", path)
	}
	return &c, nil
}

// Authorized: both the user and the salted password's digest are compared
// in constant time, always (no early exit on the user name).
func (c *MetricsCredentials) Authorized(user, password string) bool {
	sum := sha512.Sum512([]byte(c.Salt + ":" + password))
	sameUser := subtle.ConstantTimeCompare([]byte(user), []byte(c.Username))
	samePassword := subtle.ConstantTimeCompare([]byte(hex.EncodeToString(sum[:])), []byte(c.SHA512))
	return sameUser&samePassword == 1
}

// MetricsHandler serves GET /metrics to the holder of the credentials
// (replaced by SIGHUP through Credentials.Store); anything else: 401
// without valid basic auth, 404 for another path, 405 for another method.
type MetricsHandler struct {
	Credentials atomic.Pointer[MetricsCredentials]
	metrics     http.Handler
}

func NewMetricsHandler(m *Metrics, c *MetricsCredentials) *MetricsHandler {
	h := &MetricsHandler{metrics: promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})}
	h.Credentials.Store(c)
	return h
}

func (h *MetricsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, password, ok := r.BasicAuth()
	if !ok || !h.Credentials.Load().Authorized(user, password) {
		w.Header().Set("WWW-Authenticate", `Basic realm="enmasse-mqtt-gateway metrics", charset="UTF-8"`)
		http.Error(w, "401 unauthorized", http.StatusUnauthorized)
		return
	}
	if r.URL.Path != "/metrics" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h.metrics.ServeHTTP(w, r)
}

// ServeMetrics listens on address with TLS only (a plain HTTP request gets
// Go's 400 "Client sent an HTTP request to an HTTPS server") and serves h
// until ctx ends. The listen error is returned at once.
func ServeMetrics(ctx context.Context, address string, cert tls.Certificate, h http.Handler, log *slog.Logger) (net.Addr, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	ln, err := tls.Listen("tcp", address, tc)
	if err != nil {
		return nil, fmt.Errorf("metrics_listen: %v", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 8192,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "metrics_listen", address, "error", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return ln.Addr(), nil
}
