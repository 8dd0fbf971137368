package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
)

// Config is the gateway's configuration file (JSON), written by the
// mqtt_gateway role. Every field is described in README.md.
type Config struct {
	Space                 string   `json:"space"`
	ListenTLS             string   `json:"listen_tls"`
	ListenPlain           string   `json:"listen_plain"`
	TLSCertFile           string   `json:"tls_cert_file"`
	TLSKeyFile            string   `json:"tls_key_file"`
	Routers               []string `json:"routers"`
	RouterTLS             bool     `json:"router_tls"`
	RouterCAFile          string   `json:"router_ca_file"`
	RouterServerName      string   `json:"router_server_name"`
	TableFile             string   `json:"table_file"`
	MaxPacketSize         *int64   `json:"max_packet_size"`
	ReceiveMaximum        *int64   `json:"receive_maximum"`
	MaxConnectionsPerUser *int64   `json:"max_connections_per_user"`
	MaxSessionExpiry      *int64   `json:"max_session_expiry"`
	// MQTT clients of one user per shared AMQP connection to the router (pool.go)
	ClientsPerAMQPConnection *int64 `json:"clients_per_amqp_connection"`
	LogLevel                 string `json:"log_level"`
	// the gateway's own service connection (retained.go): all four or none
	ServiceRouters      []string `json:"service_routers"`
	ServiceUser         string   `json:"service_user"`
	ServicePasswordFile string   `json:"service_password_file"`
	RetainedAddress     string   `json:"retained_address"`
	servicePassword     string
	// the will journal (journal.go): the instance's own directory; "": none
	StateDir string `json:"state_dir"`
	// the metrics endpoint (metrics.go): both or none
	MetricsListen       string `json:"metrics_listen"`
	MetricsPasswordFile string `json:"metrics_password_file"`
	metricsCredentials  *MetricsCredentials
}

// Defaults of the optional numeric fields.
const (
	DefaultMaxPacketSize         = 1048576
	DefaultReceiveMaximum        = 32
	DefaultMaxConnectionsPerUser = 100
	DefaultMaxSessionExpiry      = 86400 // mapping.py session()'s max_session_expiry
	// the router's vhost group sets no maxSenders / maxReceivers (qdrouterd's
	// default 2^31-1 per connection) and one session is used per connection;
	// the bound is the blast radius of one lost connection and the go-amqp
	// session's incoming window (5000 transfers) against the receivers' credit
	DefaultClientsPerAMQPConnection = 100
	MaxClientsPerAMQPConnection     = 1000
)

// LoadConfig reads and validates path; the error names the field, its value and the rule.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("config %s: %v", path, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("config %s: %v", path, err)
	}
	return &c, nil
}

func hostPort(field, value string) error {
	host, port, err := net.SplitHostPort(value)
	if err != nil {
		return fmt.Errorf("%s: %q must be host:port (%v)", field, value, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%s: %q: the port must be 1..65535", field, value)
	}
	_ = host
	return nil
}

func intField(field string, p *int64, def, min, max int64) (int64, error) {
	if p == nil {
		return def, nil
	}
	if *p < min || *p > max {
		return 0, fmt.Errorf("%s: %d must be between %d and %d", field, *p, min, max)
	}
	return *p, nil
}

// Validate checks every field and fills the defaults.
func (c *Config) Validate() error {
	if c.Space == "" {
		return fmt.Errorf("space: is required (the address space this gateway serves)")
	}
	if c.ListenTLS == "" && c.ListenPlain == "" {
		return fmt.Errorf("listen_tls: %q and listen_plain: %q: at least one listener is required", c.ListenTLS, c.ListenPlain)
	}
	if c.ListenTLS != "" {
		if err := hostPort("listen_tls", c.ListenTLS); err != nil {
			return err
		}
		if c.TLSCertFile == "" || c.TLSKeyFile == "" {
			return fmt.Errorf("tls_cert_file: %q, tls_key_file: %q: both are required when listen_tls is set", c.TLSCertFile, c.TLSKeyFile)
		}
	}
	if c.ListenPlain != "" {
		if err := hostPort("listen_plain", c.ListenPlain); err != nil {
			return err
		}
	}
	if len(c.Routers) == 0 {
		return fmt.Errorf("routers: is required: a list of host:port of the space's router listener")
	}
	for i, r := range c.Routers {
		if err := hostPort(fmt.Sprintf("routers[%d]", i), r); err != nil {
			return err
		}
	}
	if c.RouterCAFile != "" && !c.RouterTLS {
		return fmt.Errorf("router_ca_file: %q is set but router_tls is false", c.RouterCAFile)
	}
	if c.TableFile == "" {
		return fmt.Errorf("table_file: is required (the JSON of mapping.gateway_table)")
	}
	var err error
	var v int64
	if v, err = intField("max_packet_size", c.MaxPacketSize, DefaultMaxPacketSize, 64, 268435455); err != nil {
		return err
	}
	c.MaxPacketSize = &v
	var r int64
	if r, err = intField("receive_maximum", c.ReceiveMaximum, DefaultReceiveMaximum, 1, 65535); err != nil {
		return err
	}
	c.ReceiveMaximum = &r
	var m int64
	if m, err = intField("max_connections_per_user", c.MaxConnectionsPerUser, DefaultMaxConnectionsPerUser, 0, 1<<31-1); err != nil {
		return err
	}
	c.MaxConnectionsPerUser = &m
	// seconds a persistent session outlives its connection: MQTT 3.1.1
	// clean session 0 gets this, MQTT 5's session expiry is capped by it;
	// 0 turns persistent sessions off (every session clean)
	var e int64
	if e, err = intField("max_session_expiry", c.MaxSessionExpiry, DefaultMaxSessionExpiry, 0, 1<<32-1); err != nil {
		return err
	}
	c.MaxSessionExpiry = &e
	// 1: a connection per client (no sharing, no login connection)
	var n int64
	if n, err = intField("clients_per_amqp_connection", c.ClientsPerAMQPConnection, DefaultClientsPerAMQPConnection, 1,
		MaxClientsPerAMQPConnection); err != nil {
		return err
	}
	c.ClientsPerAMQPConnection = &n
	if err := c.validateService(); err != nil {
		return err
	}
	if err := c.validateStateDir(); err != nil {
		return err
	}
	if err := c.validateMetrics(); err != nil {
		return err
	}
	switch c.LogLevel {
	case "":
		c.LogLevel = "info"
	case "info", "debug":
	default:
		return fmt.Errorf("log_level: %q must be \"info\" or \"debug\"", c.LogLevel)
	}
	return nil
}

// validateMetrics: metrics_listen (host:port, HTTPS with tls_cert_file /
// tls_key_file) and metrics_password_file go together; the password file
// is read now (and again on SIGHUP).
func (c *Config) validateMetrics() error {
	if c.MetricsListen == "" && c.MetricsPasswordFile == "" {
		return nil
	}
	if c.MetricsListen == "" {
		return fmt.Errorf("metrics_listen: is required with metrics_password_file (host:port of the HTTPS metrics listener)")
	}
	if err := hostPort("metrics_listen", c.MetricsListen); err != nil {
		return err
	}
	if c.MetricsPasswordFile == "" {
		return fmt.Errorf("metrics_password_file: is required with metrics_listen (no metrics without basic auth)")
	}
	if c.TLSCertFile == "" || c.TLSKeyFile == "" {
		return fmt.Errorf("tls_cert_file: %q, tls_key_file: %q: both are required when metrics_listen is set (HTTPS only)", c.TLSCertFile, c.TLSKeyFile)
	}
	cred, err := LoadMetricsCredentials(c.MetricsPasswordFile)
	if err != nil {
		return err
	}
	c.metricsCredentials = cred
	return nil
}

// validateStateDir: state_dir (optional) is an absolute path of an existing
// directory of this instance alone: no access for group or others (0700,
// systemd's StateDirectoryMode), writable by the gateway (a file is made
// and removed).
func (c *Config) validateStateDir() error {
	if c.StateDir == "" {
		return nil
	}
	if !filepath.IsAbs(c.StateDir) {
		return fmt.Errorf("state_dir: %q must be an absolute path", c.StateDir)
	}
	st, err := os.Stat(c.StateDir)
	if err != nil {
		return fmt.Errorf("state_dir: %v", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("state_dir: %q is not a directory", c.StateDir)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("state_dir: %q has mode %04o: group and others must have no access (0700)", c.StateDir, st.Mode().Perm())
	}
	f, err := os.CreateTemp(c.StateDir, journalTmp+"check-*")
	if err != nil {
		return fmt.Errorf("state_dir: %q is not writable: %v", c.StateDir, err)
	}
	_ = f.Close()
	_ = os.Remove(f.Name())
	return nil
}
