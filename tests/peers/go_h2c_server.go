// Go net/http serving HTTP/2 with the standard library alone: h2c by prior knowledge on
// plain TCP (Protocols.SetUnencryptedHTTP2, Go 1.24+) beside HTTP/1.1, or, with --cert and
// --key, h2 over TLS chosen by ALPN ("h2", "http/1.1"). Every path answers --body-bytes
// bytes of 'x' after --delay-ms; --max-streams is the SETTINGS_MAX_CONCURRENT_STREAMS it
// advertises. With --nagle the listener turns TCP_NODELAY back off (Go sets it on every
// connection) and the handler flushes the response HEADERS before it writes the body, so
// HEADERS and DATA leave in two sends and Nagle holds the second until the client ACKs the
// first: the HTTP/2 form of the write-write-read stall. Prints "PORT <n>" once listening.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

type nagleListener struct{ net.Listener }

func (l nagleListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err == nil {
		conn.(*net.TCPConn).SetNoDelay(false)
	}
	return conn, err
}

func main() {
	bodyBytes := flag.Int("body-bytes", 13, "response body size in bytes")
	maxStreams := flag.Int("max-streams", 0, "SETTINGS_MAX_CONCURRENT_STREAMS (0: Go's default, 250)")
	delayMs := flag.Int("delay-ms", 0, "milliseconds the handler waits before it answers")
	nagle := flag.Bool("nagle", false, "TCP_NODELAY off, and HEADERS flushed before the body is written")
	cert := flag.String("cert", "", "PEM certificate: serve h2 over TLS (ALPN) instead of h2c")
	key := flag.String("key", "", "PEM private key of --cert")
	flag.Parse()
	if (*cert == "") != (*key == "") {
		fmt.Fprintln(os.Stderr, "go_h2c_server: --cert and --key go together")
		os.Exit(2)
	}
	body := make([]byte, *bodyBytes)
	for i := range body {
		body[i] = 'x'
	}
	delay := time.Duration(*delayMs) * time.Millisecond

	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A request body (a POST) is read whole first, as a real handler would.
		io.Copy(io.Discard, r.Body)
		if delay > 0 {
			time.Sleep(delay)
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if *nagle {
			// The HEADERS frame goes out on its own; the DATA frame is a second send.
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
		}
		w.Write(body)
	})

	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	if *cert == "" {
		protocols.SetUnencryptedHTTP2(true)
	} else {
		protocols.SetHTTP2(true)
	}
	server := &http.Server{Handler: handler, Protocols: protocols}
	if *maxStreams > 0 {
		server.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: *maxStreams}
	}

	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	if *nagle {
		listener = nagleListener{listener}
	}
	fmt.Printf("PORT %d\n", listener.Addr().(*net.TCPAddr).Port)
	if *cert == "" {
		err = server.Serve(listener)
	} else {
		err = server.ServeTLS(listener, *cert, *key)
	}
	panic(err)
}
