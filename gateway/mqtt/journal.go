package main

// The will journal (docs/mqtt-design.md "Last will", issue 21): a will
// registered at CONNECT is written to the instance's state directory
// (state_dir) before the CONNACK, so that it survives the gateway process
// (kill -9, OOM). One small file per registered will, named from a hash of
// the client id (a client id never names a path) and a random token (two
// wills of one client id, e.g. a takeover, have a file each):
//
//	<sha256(client id), hex>.<16 hex>.will
//
// written to a temporary file, fsynced, renamed and the directory fsynced.
// It holds the client id, the user, the topic and address, the payload,
// QoS, retain, the will delay and the registration time, never a password
// or any credential. The file goes when the will is done: sent, cancelled
// (normal DISCONNECT, a reconnect within the will delay) or given up.
//
// At start, before accepting clients, the instance reads its journal: every
// will there belonged to a connection of the previous process, which is
// dead. Each is published on the gateway's service connection (the
// client's password is not kept), once its delay since registration has
// passed, unless the same client id and user connect to this instance
// first; the file is removed only after the router accepted a QoS 1/2 will
// (sent a QoS 0 one). Without a service connection the files are kept and
// logged, one line per will.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/Azure/go-amqp"
	"github.com/mochi-mqtt/server/v2/packets"
)

const (
	journalSuffix  = ".will"
	journalTmp     = ".tmp-"
	journalVersion = 1
)

// Journal is the instance's will journal in its state directory.
type Journal struct {
	Dir string
	Log *slog.Logger
}

// journalRecord is a journal file's JSON (payload as base64).
type journalRecord struct {
	Version    int       `json:"version"`
	Client     string    `json:"client"`
	User       string    `json:"user"`
	Topic      string    `json:"topic"`
	Address    string    `json:"address"`
	Payload    []byte    `json:"payload"`
	Qos        byte      `json:"qos"`
	Retain     bool      `json:"retain"`
	Delay      int64     `json:"delay_seconds"`
	Registered time.Time `json:"registered"`
}

// journalName: the file of one will of client; the client id only as a hash.
func journalName(client string) (string, error) {
	h := sha256.Sum256([]byte(client))
	var tok [8]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(h[:]) + "." + hex.EncodeToString(tok[:]) + journalSuffix, nil
}

func recordOf(w *will) journalRecord {
	return journalRecord{Version: journalVersion, Client: w.client, User: w.user, Topic: w.pk.TopicName,
		Address: w.address, Payload: w.pk.Payload, Qos: w.pk.FixedHeader.Qos, Retain: w.pk.FixedHeader.Retain,
		Delay: int64(w.delay / time.Second), Registered: w.registered.UTC()}
}

// Write journals w durably (temp file, fsync, rename, fsync of the
// directory) and records its file in w.journal.
func (j *Journal) Write(w *will) error {
	name, err := journalName(w.client)
	if err != nil {
		return fmt.Errorf("will journal: %v", err)
	}
	data, err := json.Marshal(recordOf(w))
	if err != nil {
		return fmt.Errorf("will journal: %v", err)
	}
	f, err := os.CreateTemp(j.Dir, journalTmp+"*")
	if err != nil {
		return fmt.Errorf("will journal: %v", err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	final := filepath.Join(j.Dir, name)
	if err == nil {
		err = os.Rename(tmp, final)
	}
	if err == nil {
		err = syncDir(j.Dir)
	}
	if err != nil {
		_ = os.Remove(tmp)
		_ = os.Remove(final)
		return fmt.Errorf("will journal: %v", err)
	}
	w.journal = final
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Remove drops w's file (none: nothing to do).
func (j *Journal) Remove(w *will) {
	if j == nil || w == nil || w.journal == "" {
		return
	}
	if err := os.Remove(w.journal); err != nil && !errors.Is(err, os.ErrNotExist) {
		j.Log.Error("will journal: file not removed", "client", w.client, "file", filepath.Base(w.journal), "error", err)
		return
	}
	w.journal = ""
	_ = syncDir(j.Dir)
}

// Load reads every journaled will; a file that cannot be read or parsed is
// skipped (and kept) with a log line; temporary files of an interrupted
// write are removed (their will was never acknowledged by a CONNACK).
func (j *Journal) Load() ([]*will, error) {
	entries, err := os.ReadDir(j.Dir)
	if err != nil {
		return nil, fmt.Errorf("will journal: %v", err)
	}
	var out []*will
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(j.Dir, name)
		if strings.HasPrefix(name, journalTmp) {
			_ = os.Remove(path)
			continue
		}
		if !strings.HasSuffix(name, journalSuffix) || !e.Type().IsRegular() {
			continue
		}
		w, err := readJournal(path)
		if err != nil {
			j.Log.Error("will journal: unreadable file skipped (kept)", "file", name, "error", err)
			continue
		}
		out = append(out, w)
	}
	return out, nil
}

func readJournal(path string) (*will, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r journalRecord
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, err
	}
	switch {
	case r.Version != journalVersion:
		return nil, fmt.Errorf("version %d, not %d", r.Version, journalVersion)
	case r.Topic == "" || r.Address == "":
		return nil, errors.New("no topic or address")
	case r.Qos > 2:
		return nil, fmt.Errorf("qos %d", r.Qos)
	case r.Delay < 0:
		return nil, fmt.Errorf("delay %d", r.Delay)
	case r.Registered.IsZero():
		return nil, errors.New("no registration time")
	}
	w := &will{client: r.Client, user: r.User, address: r.Address, delay: time.Duration(r.Delay) * time.Second,
		registered: r.Registered, journal: path, stop: make(chan struct{}),
		pk: packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Publish, Qos: r.Qos, Retain: r.Retain},
			TopicName: r.Topic, Payload: r.Payload}}
	return w, nil
}

// recoverWills runs at start, before the listeners accept clients: the
// journal's wills (of the previous process) are published on the service
// connection, now or when their delay has passed.
func (b *Bridge) recoverWills() {
	if b.Journal == nil {
		return
	}
	ws, err := b.Journal.Load()
	if err != nil {
		b.Log.Error("will journal not read", "error", err)
		return
	}
	for _, w := range ws {
		if b.Store == nil {
			b.Log.Error("journaled will not sent: no service connection configured (service_routers); file kept",
				"client", w.client, "user", w.user, "address", w.address, "qos", w.pk.FixedHeader.Qos,
				"file", filepath.Base(w.journal))
			continue
		}
		left := time.Until(w.registered.Add(w.delay))
		b.Log.Info("journaled will of the previous process", "client", w.client, "user", w.user,
			"address", w.address, "qos", w.pk.FixedHeader.Qos, "retain", w.pk.FixedHeader.Retain, "wait", left.Round(time.Second))
		if left <= 0 {
			go b.fireJournaled(w, willRegistered)
			continue
		}
		w.state.Store(willScheduled)
		b.delayed.add(w)
		go func(w *will, left time.Duration) {
			t := time.NewTimer(left)
			defer t.Stop()
			select {
			case <-t.C:
				b.delayed.remove(w)
				b.fireJournaled(w, willScheduled)
			case <-w.stop:
				b.Log.Info("journaled will cancelled: the client reconnected within the will delay", "client", w.client)
				b.Journal.Remove(w)
			}
		}(w, left)
	}
}

// journaledAttempts: a journaled will waits for the service listener (the
// router may be starting too) this many times, then stays in the journal
// for the next start.
var journaledAttempts = 8

// fireJournaled publishes a will of the previous process on the service
// connection: a retained will through the retained path first, then sent
// to the space's name of its address (the service listener is not a
// tenant's). Its file goes once the router accepted it (QoS 0: sent), or
// when the router refused it for good; else it stays.
func (b *Bridge) fireJournaled(w *will, from int32) {
	if !w.state.CompareAndSwap(from, willSending) {
		return
	}
	defer w.state.Store(willDone)
	if w.pk.FixedHeader.Retain {
		if err := b.Store.Put(w.pk.TopicName, w.pk.Payload, w.pk.FixedHeader.Qos); err != nil {
			b.Log.Info("journaled will not stored as retained; sent all the same", "client", w.client, "error", err)
			w.notStored = true
		} else {
			b.Metrics.Retained()
		}
	}
	target := b.Config.Space + "/" + w.address
	wait := 500 * time.Millisecond
	var err error
	for attempt := 1; attempt <= journaledAttempts; attempt++ {
		if err = b.Store.Send(target, willMessage(w), w.pk.FixedHeader.Qos == 0); err == nil {
			b.Log.Info("will published", "client", w.client, "address", w.address, "qos", w.pk.FixedHeader.Qos,
				"attempt", attempt, "journaled", true)
			b.Journal.Remove(w)
			return
		}
		b.Log.Info("journaled will not sent", "client", w.client, "address", w.address, "attempt", attempt, "error", err)
		var na *notAccepted
		if notAuthorized(err) || (errors.As(err, &na) && na.rejected()) {
			b.Log.Error("journaled will refused by the router: dropped", "client", w.client, "address", w.address)
			b.Journal.Remove(w)
			return
		}
		time.Sleep(wait)
		if wait < 8*time.Second {
			wait *= 2
		}
	}
	b.Log.Error("journaled will not sent: kept for the next start", "client", w.client, "address", w.address,
		"file", filepath.Base(w.journal), "error", err)
}

// Send sends msg to address on the service connection: settled (QoS 0), or
// unsettled until the router's outcome (accepted, else *notAccepted).
func (s *RetainStore) Send(address string, msg *amqp.Message, settled bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
	defer cancel()
	sess, err := s.lockedSession(ctx)
	if err != nil {
		return err
	}
	snd, err := sess.NewSender(ctx, address, nil)
	if err != nil {
		s.drop(sess, nil, err)
		return err
	}
	defer func() { _ = snd.Close(ctx) }()
	if settled {
		err = snd.Send(ctx, msg, &amqp.SendOptions{Settled: true})
	} else {
		var r amqp.SendReceipt
		if r, err = snd.SendWithReceipt(ctx, msg, nil); err == nil {
			var state amqp.DeliveryState
			if state, err = r.Wait(ctx); err == nil {
				if _, ok := state.(*amqp.StateAccepted); !ok {
					return &notAccepted{state}
				}
			}
		}
	}
	if err != nil && !notAuthorized(err) {
		s.drop(sess, nil, err)
	}
	return err
}
