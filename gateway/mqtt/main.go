// Command enmasse-mqtt-gateway is the MQTT gateway of a standard address
// space: enmasse-mqtt-gateway -config <file.json> (README.md).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
)

func fail(err error) {
	fmt.Fprintf(os.Stderr, "enmasse-mqtt-gateway: %v\n", err)
	os.Exit(2)
}

func routerTLS(c *Config) (*tls.Config, error) {
	if !c.RouterTLS {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.RouterServerName}
	if t.ServerName == "" {
		host, _, _ := net.SplitHostPort(c.Routers[0])
		t.ServerName = host
		if len(c.Routers) > 1 {
			t.ServerName = "" // per address: go-amqp takes the host of the URL
		}
	}
	if c.RouterCAFile != "" {
		pem, err := os.ReadFile(c.RouterCAFile)
		if err != nil {
			return nil, fmt.Errorf("router_ca_file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("router_ca_file: %q holds no PEM certificate", c.RouterCAFile)
		}
		t.RootCAs = pool
	}
	return t, nil
}

func main() {
	path := flag.String("config", "", "the gateway's JSON configuration file")
	flag.Parse()
	if *path == "" {
		fail(fmt.Errorf("-config: is required"))
	}
	c, err := LoadConfig(*path)
	if err != nil {
		fail(err)
	}
	table, err := LoadTable(c.TableFile, c.Space)
	if err != nil {
		fail(err)
	}
	rtls, err := routerTLS(c)
	if err != nil {
		fail(err)
	}
	var ltls *tls.Config
	var cert tls.Certificate
	if c.ListenTLS != "" || c.MetricsListen != "" {
		if cert, err = tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile); err != nil {
			fail(fmt.Errorf("tls_cert_file/tls_key_file: %v", err))
		}
	}
	if c.ListenTLS != "" {
		ltls = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	}
	level := slog.LevelInfo
	if c.LogLevel == "debug" {
		level = slog.LevelDebug
	}
	log := slog.New(filterHandler{slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})}).With("space", c.Space)
	caps := mqtt.NewDefaultServerCapabilities()
	caps.MaximumPacketSize = uint32(*c.MaxPacketSize)
	caps.ReceiveMaximum = uint16(*c.ReceiveMaximum)
	caps.MaximumQos = 2
	caps.SharedSubAvailable = 0
	// mochi's outbound queue per client (default 8,192 pointers, 64 KiB)
	// carries only mochi's own fan-out of a PUBLISH to its local
	// subscribers, which the bridge never lets happen (OnPublish rejects
	// every PUBLISH, wills are the bridge's, mochi stores no retained
	// message): the bridge writes its deliveries with WritePacket
	caps.MaximumClientWritesPending = 16
	// mochi keeps an offline session's client (subscriptions, in-flight
	// messages) this long and then calls OnClientExpired (session.go)
	caps.MaximumSessionExpiryInterval = uint32(*c.MaxSessionExpiry)
	// mochi's own logs go through the same filter: errors only ("info"; its
	// warnings are every closed connection), everything with "debug"
	mlevel := slog.LevelError
	if c.LogLevel == "debug" {
		mlevel = slog.LevelDebug
	}
	mlog := slog.New(filterHandler{slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: mlevel})}).With("from", "mochi")
	server := mqtt.New(&mqtt.Options{Logger: mlog, Capabilities: caps})
	b := NewBridge(c, table, rtls, log)
	b.Server = server
	b.Store = newRetainStore(c, b)
	if c.StateDir != "" {
		b.Journal = &Journal{Dir: c.StateDir, Log: log}
	} else {
		log.Info("no state_dir: wills do not survive the gateway process (kill -9, OOM)")
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var mh *MetricsHandler
	if c.MetricsListen != "" {
		b.Metrics = NewMetrics(c.Space, b.Clients, b.pool.Connections)
		mh = NewMetricsHandler(b.Metrics, c.metricsCredentials)
		if _, err := ServeMetrics(ctx, c.MetricsListen, cert, mh, log); err != nil {
			fail(err)
		}
	}
	if err := server.AddHook(b, nil); err != nil {
		fail(err)
	}
	// the previous process's wills, before any client connects (journal.go)
	b.recoverWills()
	// which client ids have a session record (session_store.go)
	b.loadRecordIndex()
	// the retained messages of AMQP clients (observer.go)
	b.observeRetained()
	// sessions other instances take over (takeover.go)
	b.watchTakeovers()
	// the listeners hand mochi tailConns (disconnect.go); otherwise mochi's TCP listener
	if c.ListenTLS != "" {
		ln, err := net.Listen("tcp", c.ListenTLS)
		if err == nil {
			err = server.AddListener(listeners.NewNet("tls", tailListener{tls.NewListener(ln, ltls)}))
		}
		if err != nil {
			fail(fmt.Errorf("listen_tls: %v", err))
		}
	}
	if c.ListenPlain != "" {
		ln, err := net.Listen("tcp", c.ListenPlain)
		if err == nil {
			err = server.AddListener(listeners.NewNet("plain", tailListener{ln}))
		}
		if err != nil {
			fail(fmt.Errorf("listen_plain: %v", err))
		}
	}
	if err := server.Serve(); err != nil {
		fail(err)
	}
	log.Info("started", "listen_tls", c.ListenTLS, "listen_plain", c.ListenPlain, "routers", c.Routers,
		"addresses", len(table.Addresses),
		"retained_address", c.RetainedAddress, "service_user", c.ServiceUser, "metrics_listen", c.MetricsListen,
		"state_dir", c.StateDir)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	for s := range sig {
		if s != syscall.SIGHUP {
			break
		}
		if t, err := LoadTable(c.TableFile, c.Space); err != nil {
			log.Error("table not reloaded: the previous one stays", "error", err)
		} else {
			b.SetTable(t)
			log.Info("table reloaded", "addresses", len(t.Addresses))
		}
		if mh != nil {
			if cred, err := LoadMetricsCredentials(c.MetricsPasswordFile); err != nil {
				log.Error("metrics password not reloaded: the previous one stays", "error", err)
			} else {
				mh.Credentials.Store(cred)
				log.Info("metrics password reloaded")
			}
		}
	}
	log.Info("stopping")
	_ = server.Close()
}
