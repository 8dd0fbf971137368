// loadgen is the load generator of bench/mqtt_gateway.py (issue 21): MQTT
// clients (eclipse/paho.mqtt.golang, MQTT 3.1.1) and AMQP clients
// (Azure/go-amqp), both over TLS, in one Go process per role so that the
// client is not what limits the system under test (the benchmark measures
// this binary alone against mosquitto to show it).
//
// Every message body starts with the sender's time.Now().UnixNano() (one
// clock: every process runs on the same host); a receiver records now - that.
// Each mode prints one JSON line on stdout.
//
//	loadgen mqtt-pub   -clients N -topic T [-fanout K] -n total -qos Q [-rate R]
//	loadgen mqtt-sub   -clients N -topic T [-per-client] -n total -qos Q
//	loadgen amqp-send  -address A [-fanout K] -n total -qos Q [-rate R]
//	loadgen amqp-recv  -address A -n total
//	loadgen mqtt-idle  -clients N   (connects, writes -ready, holds until SIGTERM)
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	amqp "github.com/Azure/go-amqp"
	mqtt "github.com/eclipse/paho.mqtt.golang"
)

type opts struct {
	url, ca, user, password, topic, address, ready, start, control string
	clients, fanout, n, qos, size, window                          int
	rate                                                           float64
	perClient, distinctUsers                                       bool
	idle, timeout                                                  time.Duration
}

func tlsConfig(ca string) *tls.Config {
	if ca == "" {
		return nil
	}
	pem, err := os.ReadFile(ca)
	must(err)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func out(v map[string]interface{}) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func payload(size int) []byte {
	if size < 8 {
		size = 8
	}
	b := make([]byte, size)
	binary.BigEndian.PutUint64(b, uint64(time.Now().UnixNano()))
	return b
}

func stamp(b []byte) (time.Duration, bool) {
	if len(b) < 8 {
		return 0, false
	}
	return time.Duration(time.Now().UnixNano() - int64(binary.BigEndian.Uint64(b))), true
}

// mqttConnect connects n clients (in parallel, 50 at a time) and returns them.
func mqttConnect(o *opts, n int, prefix string, onMsg mqtt.MessageHandler) []mqtt.Client {
	clients := make([]mqtt.Client, n)
	sem := make(chan struct{}, 50)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			user := o.user
			if o.distinctUsers {
				user = fmt.Sprintf("%s-%d", o.user, i)
			}
			co := mqtt.NewClientOptions().AddBroker(o.url).SetClientID(fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), i)).
				SetUsername(user).SetPassword(o.password).SetCleanSession(true).SetAutoReconnect(false).
				SetKeepAlive(600 * time.Second).SetConnectTimeout(60 * time.Second).SetProtocolVersion(4).
				SetWriteTimeout(60 * time.Second).SetOrderMatters(false)
			if t := tlsConfig(o.ca); t != nil {
				co.SetTLSConfig(t)
			}
			if onMsg != nil {
				co.SetDefaultPublishHandler(onMsg)
			}
			c := mqtt.NewClient(co)
			tok := c.Connect()
			if !tok.WaitTimeout(90*time.Second) || tok.Error() != nil {
				failed.Add(1)
				fmt.Fprintln(os.Stderr, "connect:", tok.Error())
				return
			}
			clients[i] = c
		}(i)
	}
	wg.Wait()
	if failed.Load() > 0 {
		must(fmt.Errorf("%d of %d MQTT connections failed", failed.Load(), n))
	}
	return clients
}

func writeReady(path string) {
	if path != "" {
		must(os.WriteFile(path, []byte("ok\n"), 0o644))
	}
}

// runs calls body once per run the driver asks for: it writes
// <control>/<role>-go-<k> holding "n rate" (or "end"); each run's JSON
// line goes to stdout and <control>/<role>-done-<k> is written after it.
// Without -control: one run of -n messages at -rate.
func runs(o *opts, role string, body func(n int, rate float64) map[string]interface{}) {
	if o.control == "" {
		out(body(o.n, o.rate))
		return
	}
	for k := 0; ; k++ {
		path := fmt.Sprintf("%s/%s-go-%d", o.control, role, k)
		var data []byte
		for {
			b, err := os.ReadFile(path)
			if err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
				data = b
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		var n int
		var rate float64
		if _, err := fmt.Sscanf(string(data), "%d %g", &n, &rate); err != nil {
			return // "end"
		}
		out(body(n, rate))
		must(os.WriteFile(fmt.Sprintf("%s/%s-done-%d", o.control, role, k), []byte("ok\n"), 0o644))
	}
}

// waitStart blocks until the -start file exists (so that every process begins together).
func waitStart(path string) {
	for path != "" {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// pacer returns the time at which message seq (0-based, of total rate r) is due; zero rate: now.
func due(t0 time.Time, seq int, rate float64) time.Time {
	if rate <= 0 {
		return time.Time{}
	}
	return t0.Add(time.Duration(float64(seq) / rate * float64(time.Second)))
}

func sleepUntil(t time.Time) {
	if d := time.Until(t); d > 0 {
		time.Sleep(d)
	}
}

func mqttPub(o *opts) {
	clients := mqttConnect(o, o.clients, "pub", nil)
	writeReady(o.ready)
	waitStart(o.start)
	runs(o, "send", func(n int, rate float64) map[string]interface{} { return publish(o, clients, n, rate) })
	for _, c := range clients {
		c.Disconnect(100)
	}
}

// publish sends n messages from the clients (message seq from client seq % N), paced to rate in all.
func publish(o *opts, clients []mqtt.Client, n int, rate float64) map[string]interface{} {
	t0 := time.Now()
	var wg sync.WaitGroup
	var errs atomic.Int64
	for i, c := range clients {
		wg.Add(1)
		go func(i int, c mqtt.Client) {
			defer wg.Done()
			window := make(chan mqtt.Token, o.window)
			var done sync.WaitGroup
			done.Add(1)
			go func() { // completes the tokens in order: the in-flight window of this client
				defer done.Done()
				for tok := range window {
					tok.Wait()
					if tok.Error() != nil && errs.Add(1) == 1 {
						fmt.Fprintln(os.Stderr, "publish:", tok.Error())
					}
				}
			}()
			for seq := i; seq < n; seq += len(clients) {
				sleepUntil(due(t0, seq, rate))
				topic := o.topic
				if o.fanout > 0 {
					topic = fmt.Sprintf("%s/%d", o.topic, seq%o.fanout)
				}
				tok := c.Publish(topic, byte(o.qos), false, payload(o.size))
				if o.qos > 0 {
					window <- tok
				}
			}
			close(window)
			done.Wait()
		}(i, c)
	}
	wg.Wait()
	end := time.Now()
	return map[string]interface{}{"mode": "mqtt-pub", "sent": n, "errors": errs.Load(), "start": unix(t0), "end": unix(end)}
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// recorder collects latencies and the first/last receive times.
type recorder struct {
	mu          sync.Mutex
	lat         []time.Duration
	first, last time.Time
	got         atomic.Int64
	done        chan struct{}
	want        int64
}

func newRecorder(want int) *recorder {
	return &recorder{lat: make([]time.Duration, 0, want), done: make(chan struct{}), want: int64(want)}
}

func (r *recorder) add(body []byte) {
	d, ok := stamp(body)
	now := time.Now()
	r.mu.Lock()
	if ok {
		r.lat = append(r.lat, d)
	}
	if r.first.IsZero() {
		r.first = now
	}
	r.last = now
	r.mu.Unlock()
	if r.got.Add(1) == r.want {
		close(r.done)
	}
}

// wait returns when want messages came, or nothing came for idle after the first, or timeout.
func (r *recorder) wait(idle, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	prev := int64(-1)
	lastChange := time.Now()
	for time.Now().Before(deadline) {
		select {
		case <-r.done:
			return
		case <-time.After(100 * time.Millisecond):
		}
		g := r.got.Load()
		if g != prev {
			prev, lastChange = g, time.Now()
		} else if g > 0 && time.Since(lastChange) > idle {
			return
		}
	}
}

func (r *recorder) result(mode string) map[string]interface{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	lat := append([]time.Duration(nil), r.lat...)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return -1
		}
		i := int(p * float64(len(lat)-1))
		return float64(lat[i]) / 1e6
	}
	res := map[string]interface{}{"mode": mode, "received": r.got.Load(), "p50_ms": pct(0.50), "p99_ms": pct(0.99),
		"max_ms": pct(1.0)}
	if !r.first.IsZero() {
		res["first"], res["last"] = unix(r.first), unix(r.last)
	}
	return res
}

func mqttSub(o *opts) {
	var cur atomic.Pointer[recorder]
	cur.Store(newRecorder(o.n))
	clients := mqttConnect(o, o.clients, "sub", func(_ mqtt.Client, m mqtt.Message) { cur.Load().add(m.Payload()) })
	// every client subscribes at once, as a fleet of devices would, and then
	// the SUBACKs are awaited: one after the other, 1,000 subscriptions would
	// take 1,000 times the gateway's SUBACK wait (its 300 ms recv probe)
	toks := make([]mqtt.Token, len(clients))
	topics := make([]string, len(clients))
	for i, c := range clients {
		topics[i] = o.topic
		if o.perClient {
			topics[i] = fmt.Sprintf("%s/%d", o.topic, i)
		}
		toks[i] = c.Subscribe(topics[i], byte(o.qos), nil)
	}
	for i, tok := range toks {
		if !tok.WaitTimeout(60*time.Second) || tok.Error() != nil {
			must(fmt.Errorf("subscribe %s: %v", topics[i], tok.Error()))
		}
	}
	writeReady(o.ready)
	runs(o, "recv", func(n int, _ float64) map[string]interface{} { return receive(o, &cur, n, "mqtt-sub") })
	for _, c := range clients {
		c.Disconnect(100)
	}
}

// receive arms a new recorder for n messages (writes <control>/recv-armed-<k> via the
// caller's protocol: the driver waits for the armed file) and waits for them.
func receive(o *opts, cur *atomic.Pointer[recorder], n int, mode string) map[string]interface{} {
	rec := newRecorder(n)
	cur.Store(rec)
	if o.control != "" {
		must(os.WriteFile(o.control+"/recv-armed", []byte(fmt.Sprintf("%d\n", time.Now().UnixNano())), 0o644))
	}
	rec.wait(o.idle, o.timeout)
	return rec.result(mode)
}

func amqpDial(ctx context.Context, o *opts) *amqp.Conn {
	co := &amqp.ConnOptions{SASLType: amqp.SASLTypePlain(o.user, o.password), TLSConfig: tlsConfig(o.ca)}
	conn, err := amqp.Dial(ctx, o.url, co)
	must(err)
	return conn
}

func amqpRecv(o *opts) {
	ctx := context.Background()
	conn := amqpDial(ctx, o)
	sess, err := conn.NewSession(ctx, nil)
	must(err)
	r, err := sess.NewReceiver(ctx, o.address, &amqp.ReceiverOptions{Credit: 1000})
	must(err)
	var cur atomic.Pointer[recorder]
	cur.Store(newRecorder(o.n))
	writeReady(o.ready)
	go func() {
		for {
			m, err := r.Receive(ctx, nil)
			if err != nil {
				return
			}
			cur.Load().add(m.GetData())
			_ = r.AcceptMessage(ctx, m)
		}
	}()
	runs(o, "recv", func(n int, _ float64) map[string]interface{} { return receive(o, &cur, n, "amqp-recv") })
	_ = conn.Close()
}

func amqpSend(o *opts) {
	ctx := context.Background()
	conn := amqpDial(ctx, o)
	sess, err := conn.NewSession(ctx, nil)
	must(err)
	k := o.fanout
	if k <= 0 {
		k = 1
	}
	// QoS 0: pre-settled deliveries, QoS 1: unsettled (qdrouterd answers
	// any requested sender settle mode with "mixed": mixed, settled per delivery).
	mode := amqp.SenderSettleModeMixed
	var sendOpts *amqp.SendOptions
	if o.qos == 0 {
		sendOpts = &amqp.SendOptions{Settled: true}
	}
	senders := make([]*amqp.Sender, k)
	for i := range senders {
		addr := o.address
		if o.fanout > 0 {
			addr = fmt.Sprintf("%s/%d", o.address, i)
		}
		senders[i], err = sess.NewSender(ctx, addr, &amqp.SenderOptions{SettlementMode: &mode})
		must(err)
	}
	writeReady(o.ready)
	waitStart(o.start)
	runs(o, "send", func(n int, rate float64) map[string]interface{} { return amqpBurst(o, senders, sendOpts, n, rate) })
	_ = conn.Close()
}

func amqpBurst(o *opts, senders []*amqp.Sender, sendOpts *amqp.SendOptions, n int, rate float64) map[string]interface{} {
	ctx := context.Background()
	k := len(senders)
	t0 := time.Now()
	jobs := make(chan int, 1024)
	var wg sync.WaitGroup
	var errs atomic.Int64
	workers := o.window
	if workers < 1 {
		workers = 1
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := range jobs {
				m := amqp.NewMessage(payload(o.size))
				if err := senders[seq%k].Send(ctx, m, sendOpts); err != nil {
					if errs.Add(1) == 1 {
						fmt.Fprintln(os.Stderr, "send:", err)
					}
				}
			}
		}()
	}
	for seq := 0; seq < n; seq++ {
		sleepUntil(due(t0, seq, rate))
		jobs <- seq
	}
	close(jobs)
	wg.Wait()
	end := time.Now()
	return map[string]interface{}{"mode": "amqp-send", "sent": n, "errors": errs.Load(), "start": unix(t0), "end": unix(end)}
}

func mqttIdle(o *opts) {
	t0 := time.Now()
	clients := mqttConnect(o, o.clients, "idle", nil)
	out(map[string]interface{}{"mode": "mqtt-idle", "connected": len(clients), "seconds": time.Since(t0).Seconds()})
	writeReady(o.ready)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
	case <-time.After(o.timeout):
	}
	for _, c := range clients {
		c.Disconnect(0)
	}
}

func main() {
	if len(os.Args) < 2 {
		must(fmt.Errorf("usage: loadgen mqtt-pub|mqtt-sub|amqp-send|amqp-recv|mqtt-idle [flags]"))
	}
	mode := os.Args[1]
	o := &opts{}
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	fs.StringVar(&o.url, "url", "ssl://127.0.0.1:8883", "server URL (ssl://, tcp://, amqps://, amqp://)")
	fs.StringVar(&o.ca, "ca", "", "CA file to trust (TLS)")
	fs.StringVar(&o.user, "user", "", "user name")
	fs.StringVar(&o.password, "password", "", "password")
	fs.BoolVar(&o.distinctUsers, "distinct-users", false, "MQTT client i logs in as <user>-<i> (same password)")
	fs.StringVar(&o.topic, "topic", "bench", "MQTT topic (prefix with -fanout / -per-client)")
	fs.StringVar(&o.address, "address", "bench", "AMQP address (prefix with -fanout)")
	fs.StringVar(&o.ready, "ready", "", "file written once connected (and subscribed)")
	fs.StringVar(&o.control, "control", "", "directory of the driver's run files (several runs on the same connections)")
	fs.StringVar(&o.start, "start", "", "senders wait for this file before the first message")
	fs.IntVar(&o.clients, "clients", 1, "MQTT connections")
	fs.IntVar(&o.fanout, "fanout", 0, "spread messages round-robin over <topic>/0..K-1")
	fs.BoolVar(&o.perClient, "per-client", false, "subscriber i subscribes <topic>/i")
	fs.IntVar(&o.n, "n", 10000, "messages in all")
	fs.IntVar(&o.qos, "qos", 0, "QoS 0 or 1 (AMQP: pre-settled or unsettled)")
	fs.IntVar(&o.size, "size", 64, "message body bytes (>= 8)")
	fs.IntVar(&o.window, "window", 32, "unacknowledged QoS 1 messages per MQTT client / AMQP send workers")
	fs.Float64Var(&o.rate, "rate", 0, "messages per second in all (0: as fast as possible)")
	fs.DurationVar(&o.idle, "idle", 3*time.Second, "a receiver stops when nothing came for this long")
	fs.DurationVar(&o.timeout, "timeout", 120*time.Second, "a receiver gives up after")
	must(fs.Parse(os.Args[2:]))
	switch mode {
	case "mqtt-pub":
		mqttPub(o)
	case "mqtt-sub":
		mqttSub(o)
	case "amqp-send":
		amqpSend(o)
	case "amqp-recv":
		amqpRecv(o)
	case "mqtt-idle":
		mqttIdle(o)
	default:
		must(fmt.Errorf("unknown mode %q", mode))
	}
}
