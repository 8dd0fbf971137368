// amqp-count receives up to n messages from an address (it stops earlier
// when none came for -idle once the first arrived) and prints how many and
// the times of the first and the last (the benchmark's AMQP consumer).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	amqp "github.com/Azure/go-amqp"
)

func main() {
	url := flag.String("url", "amqp://127.0.0.1:5672", "router")
	address := flag.String("address", "bench", "source address")
	n := flag.Int("n", 10000, "messages to receive")
	timeout := flag.Duration("timeout", 60*time.Second, "give up after")
	ready := flag.String("ready", "", "file written once the receiver is attached")
	user := flag.String("user", "", "SASL PLAIN user (default: ANONYMOUS)")
	password := flag.String("password", "", "SASL PLAIN password")
	idle := flag.Duration("idle", 3*time.Second, "stop when nothing came for this long (after the first)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	sasl := amqp.SASLTypeAnonymous()
	if *user != "" {
		sasl = amqp.SASLTypePlain(*user, *password)
	}
	conn, err := amqp.Dial(ctx, *url, &amqp.ConnOptions{SASLType: sasl})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sess, _ := conn.NewSession(ctx, nil)
	r, err := sess.NewReceiver(ctx, *address, &amqp.ReceiverOptions{Credit: 1000})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *ready != "" {
		_ = os.WriteFile(*ready, []byte("ok\n"), 0o644)
	}
	var first, last time.Time
	got := 0
	for got < *n {
		rctx, rcancel := ctx, context.CancelFunc(func() {})
		if got > 0 {
			rctx, rcancel = context.WithTimeout(ctx, *idle)
		}
		m, err := r.Receive(rctx, nil)
		rcancel()
		if err != nil {
			break
		}
		last = time.Now()
		if got == 0 {
			first = last
		}
		got++
		_ = r.AcceptMessage(ctx, m)
	}
	fmt.Printf("received=%d first=%.6f last=%.6f\n", got, float64(first.UnixNano())/1e9, float64(last.UnixNano())/1e9)
	if got < *n {
		os.Exit(2)
	}
}
