package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/go-amqp"
	"github.com/mochi-mqtt/server/v2/packets"
)

// the auth service's password file (plugins/module_utils/auth/metrics.py password_file_document)
func passwordDoc(user, salt, password string) string {
	sum := sha512.Sum512([]byte(salt + ":" + password))
	return fmt.Sprintf(`{"username": %q, "salt": %q, "sha512": %q}`, user, salt, hex.EncodeToString(sum[:]))
}

func writeFile(t *testing.T, name, text string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func testHandler(t *testing.T) (*Metrics, *MetricsHandler, *int) {
	t.Helper()
	cred, err := LoadMetricsCredentials(writeFile(t, "pw.json", passwordDoc("prometheus", "salt1", "s3cret"), 0o640))
	if err != nil {
		t.Fatal(err)
	}
	clients := new(int)
	m := NewMetrics("tenant-a", func() int { return *clients }, func() int { return (*clients + 1) / 2 })
	return m, NewMetricsHandler(m, cred), clients
}

func get(h http.Handler, path, user, password string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	if user != "" || password != "" {
		r.SetBasicAuth(user, password)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestMetricsRefusesWithoutTheCredentials(t *testing.T) {
	_, h, _ := testHandler(t)
	for _, c := range [][2]string{{"", ""}, {"prometheus", "wrong"}, {"other", "s3cret"}, {"prometheus", ""}, {"", "s3cret"}} {
		w := get(h, "/metrics", c[0], c[1])
		if w.Code != http.StatusUnauthorized || strings.Contains(w.Body.String(), metricsPrefix) {
			t.Errorf("user %q password %q: want 401 without series, got %d %q", c[0], c[1], w.Code, w.Body.String())
		}
		if !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Basic ") {
			t.Errorf("401 without WWW-Authenticate: Basic")
		}
	}
	if w := get(h, "/other", "", ""); w.Code != http.StatusUnauthorized {
		t.Errorf("/other unauthenticated: want 401, got %d", w.Code)
	}
	if w := get(h, "/other", "prometheus", "s3cret"); w.Code != http.StatusNotFound {
		t.Errorf("/other: want 404, got %d", w.Code)
	}
}

func TestMetricsCountsWithBoundedLabels(t *testing.T) {
	m, h, clients := testHandler(t)
	*clients = 3
	for i := 0; i < 5; i++ {
		m.Publish(1, pubAccepted)
	}
	m.Publish(0, pubAccepted)
	m.Publish(2, pubRefused)
	m.Publish(7, pubRefused) // not a QoS: folded into "2", no new series
	m.Connection(connAccepted)
	m.ConnectionRefused(packets.ErrBadUsernameOrPassword)
	m.ConnectionRefused(packets.ErrBadUsernameOrPassword)
	m.ConnectionRefused(packets.ErrNotAuthorized)
	m.ConnectionRefused(packets.ErrQuotaExceeded)
	m.ConnectionRefused(packets.ErrServerUnavailable)
	m.ConnectionRefused(packets.ErrUnspecifiedError) // anything else: server_unavailable
	m.Delivered(1)
	m.Delivered(0)
	m.Subscription(true)
	m.Subscription(false)
	m.Retained()
	w := get(h, "/metrics", "prometheus", "s3cret")
	if w.Code != http.StatusOK {
		t.Fatalf("want 200, got %d %s", w.Code, w.Body.String())
	}
	body := w.Body.String()
	for _, want := range []string{
		`enmasse_mqtt_gateway_connected_clients{space="tenant-a"} 3`,
		`enmasse_mqtt_gateway_router_connections{space="tenant-a"} 2`,
		`enmasse_mqtt_gateway_publishes_received_total{outcome="accepted",qos="1",space="tenant-a"} 5`,
		`enmasse_mqtt_gateway_publishes_received_total{outcome="accepted",qos="0",space="tenant-a"} 1`,
		`enmasse_mqtt_gateway_publishes_received_total{outcome="refused",qos="2",space="tenant-a"} 2`,
		`enmasse_mqtt_gateway_publishes_received_total{outcome="failed",qos="0",space="tenant-a"} 0`,
		`enmasse_mqtt_gateway_connections_total{outcome="accepted",space="tenant-a"} 1`,
		`enmasse_mqtt_gateway_connections_total{outcome="bad_credentials",space="tenant-a"} 2`,
		`enmasse_mqtt_gateway_connections_total{outcome="not_authorized",space="tenant-a"} 1`,
		`enmasse_mqtt_gateway_connections_total{outcome="quota_exceeded",space="tenant-a"} 1`,
		`enmasse_mqtt_gateway_connections_total{outcome="server_unavailable",space="tenant-a"} 2`,
		`enmasse_mqtt_gateway_messages_delivered_total{qos="1",space="tenant-a"} 1`,
		`enmasse_mqtt_gateway_messages_delivered_total{qos="2",space="tenant-a"} 0`,
		`enmasse_mqtt_gateway_subscriptions_total{outcome="refused",space="tenant-a"} 1`,
		`enmasse_mqtt_gateway_retained_stored_total{space="tenant-a"} 1`,
		`process_start_time_seconds{space="tenant-a"}`,
	} {
		if !strings.Contains(body, want+"\n") && !strings.Contains(body, want+" ") {
			t.Errorf("missing %s", want)
		}
	}
	n := strings.Count(body, "enmasse_mqtt_gateway_publishes_received_total{")
	if n != 9 { // 3 QoS x 3 outcomes, whatever was counted
		t.Errorf("publishes_received_total: want 9 series, got %d", n)
	}
}

func TestNilMetricsIsOff(t *testing.T) {
	var m *Metrics
	m.Publish(1, pubAccepted)
	m.ConnectionRefused(packets.ErrNotAuthorized)
	m.Delivered(0)
	m.Subscription(true)
	m.Retained()
}

func TestMetricsPasswordFile(t *testing.T) {
	if _, err := LoadMetricsCredentials(writeFile(t, "pw.json", passwordDoc("p", "s", "x"), 0o644)); err == nil ||
		!strings.Contains(err.Error(), "others must have no access") {
		t.Errorf("0644: want a mode error, got %v", err)
	}
	for _, text := range []string{`{}`, `{"username": "p", "salt": "s"}`, `{"username": "p", "salt": "s", "sha512": "zz"}`,
		`{"username": "p", "salt": "s", "sha512": "ab", "extra": 1}`, `not json`} {
		_, err := LoadMetricsCredentials(writeFile(t, "pw.json", text, 0o600))
		if err == nil || !strings.Contains(err.Error(), "metrics_password_file") {
			t.Errorf("%s: want an error naming metrics_password_file, got %v", text, err)
		}
	}
	c, err := LoadMetricsCredentials(writeFile(t, "pw.json", strings.ToUpper(passwordDoc("P", "S", "X")), 0o600))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Authorized("P", "X") || c.Authorized("P", "x") || c.Authorized("p", "X") {
		t.Errorf("upper-case hex digest: only P/X must be authorized")
	}
}

func TestMetricsConfig(t *testing.T) {
	pw := writeFile(t, "pw.json", passwordDoc("prometheus", "s", "x"), 0o640)
	base := `"space": "s", "routers": ["127.0.0.1:5671"], "table_file": "/t.json", "listen_plain": ":1883"`
	cases := map[string]string{
		`{` + base + `, "metrics_listen": ":9467"}`:                                                                              "metrics_password_file",
		`{` + base + `, "metrics_password_file": "` + pw + `"}`:                                                                  "metrics_listen",
		`{` + base + `, "metrics_listen": "9467", "metrics_password_file": "` + pw + `"}`:                                        "metrics_listen",
		`{` + base + `, "metrics_listen": ":9467", "metrics_password_file": "` + pw + `"}`:                                       "tls_cert_file",
		`{` + base + `, "metrics_listen": ":9467", "tls_cert_file": "c", "tls_key_file": "k", "metrics_password_file": "/nope"}`: "metrics_password_file",
	}
	dir := t.TempDir()
	for text, field := range cases {
		p := filepath.Join(dir, "c.json")
		_ = os.WriteFile(p, []byte(text), 0o600)
		if _, err := LoadConfig(p); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: want an error naming %q, got %v", text, field, err)
		}
	}
	p := filepath.Join(dir, "c.json")
	_ = os.WriteFile(p, []byte(`{`+base+`, "metrics_listen": ":9467", "tls_cert_file": "c", "tls_key_file": "k", "metrics_password_file": "`+pw+`"}`), 0o600)
	c, err := LoadConfig(p)
	if err != nil || c.metricsCredentials == nil || c.metricsCredentials.Username != "prometheus" {
		t.Errorf("valid metrics config: %v %+v", err, c)
	}
}

func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestServeMetricsIsHTTPSOnly(t *testing.T) {
	_, h, _ := testHandler(t)
	cert := selfSigned(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := ServeMetrics(ctx, "127.0.0.1:0", cert, h, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// plain HTTP: Go's TLS server answers 400, never the series
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(body), metricsPrefix) {
			t.Errorf("plain HTTP: want 400 without series, got %d %q", resp.StatusCode, body)
		}
	}
	pool := x509.NewCertPool()
	leaf, _ := x509.ParseCertificate(cert.Certificate[0])
	pool.AddCert(leaf)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, c := range []struct {
		user, password string
		code           int
	}{{"", "", 401}, {"prometheus", "bad", 401}, {"prometheus", "s3cret", 200}} {
		req, _ := http.NewRequest(http.MethodGet, "https://"+addr.String()+"/metrics", nil)
		if c.user != "" {
			req.SetBasicAuth(c.user, c.password)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("HTTPS %q/%q: want %d, got %d", c.user, c.password, c.code, resp.StatusCode)
		}
	}
	// a new password file (SIGHUP) replaces the credentials
	cred, _ := LoadMetricsCredentials(writeFile(t, "pw2.json", passwordDoc("prometheus", "salt2", "n3w"), 0o600))
	h.Credentials.Store(cred)
	req, _ := http.NewRequest(http.MethodGet, "https://"+addr.String()+"/metrics", nil)
	req.SetBasicAuth("prometheus", "s3cret")
	if resp, err := client.Do(req); err != nil || resp.StatusCode != 401 {
		t.Errorf("old password after the reload: want 401, got %v %v", resp, err)
	}
}

func TestSendOutcomeRefusedOnlyForUnauthorizedAccess(t *testing.T) {
	unauthorized := &amqp.LinkError{RemoteErr: &amqp.Error{Condition: amqp.ErrCondUnauthorizedAccess}}
	if got := sendOutcome(fmt.Errorf("wrapped: %w", unauthorized)); got != pubRefused {
		t.Errorf("unauthorized-access: want refused, got %s", got)
	}
	if got := sendOutcome(&amqp.LinkError{RemoteErr: &amqp.Error{Condition: amqp.ErrCondInternalError}}); got != pubFailed {
		t.Errorf("internal-error: want failed, got %s", got)
	}
	if got := sendOutcome(context.DeadlineExceeded); got != pubFailed {
		t.Errorf("timeout: want failed, got %s", got)
	}
}
