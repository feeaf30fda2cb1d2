// Command quic-go-peer is an HTTP/0.9 (ALPN hq-interop) and HTTP/3 (ALPN h3)
// interop peer on top of quic-go's public API and its http3 package.
//
// The server offers both ALPNs on its port and serves each connection with the
// protocol it negotiated; the client speaks HTTP/3 in the case "http3",
// HTTP/0.9 otherwise.
//
// Command line (shared by every peer in tools/interop, see README.md):
//
//	quic-go-peer server --listen HOST:PORT --cert FILE --key FILE --root DIR [--retry] [--keylog FILE]
//	quic-go-peer client (--ca FILE | --no-verify) --out DIR [--case NAME] [--keylog FILE] URL...
//
// Exit status: 0 on success, 1 on failure, 127 (and the line "unsupported")
// for a test case this peer does not implement. The last line printed is
// always "bytes=N secs=S mbps=M".
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	_ "unsafe" // for go:linkname

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/qlog"
)

const (
	alpn   = "hq-interop"
	alpnH3 = "h3" // http3.NextProtoH3
	// A request line is tiny; anything longer is a broken or hostile client.
	maxRequest = 64 << 10
	// The largest test file is a few MiB; refuse to buffer unbounded responses.
	maxResponse     = 256 << 20
	exitUnsupported = 127
	// Every peer in tools/interop gives up on a silent connection after 30 s, the handshake
	// included: our apps' idle timeout, so that no end gives up on a connection the other end
	// is still working on. quic-go's defaults are 5 s of silence during the handshake and
	// 10 s for all of it; in the loss cases a quic-go server that waited, amplification-
	// limited, for our client's next probe gave up while our client was still probing
	// (issue 26). The whole handshake may take twice this (quic-go's rule).
	idleTimeout = 30 * time.Second
)

var cases = map[string]bool{
	"handshake": true, "transfer": true, "multiplexing": true, "retry": true,
	"resumption": true, "zerortt": true, "chacha20": true, "keyupdate": true,
	"http3": true,
	// quic-go marks ECT(0) and reports ECN counts on Linux by default.
	"ecn": true,
	// Active migration (RFC 9000 §9.2) to a new local socket after the handshake.
	"connectionmigration": true,
}

// crypto/tls has no setting for the TLS 1.3 cipher suites it offers or picks.
// These two lists are what it uses for both; crypto/tls explicitly keeps them
// reachable by linkname. Only the chacha20 case touches them.
//
//go:linkname defaultCipherSuitesTLS13 crypto/tls.defaultCipherSuitesTLS13
var defaultCipherSuitesTLS13 []uint16

//go:linkname defaultCipherSuitesTLS13NoAES crypto/tls.defaultCipherSuitesTLS13NoAES
var defaultCipherSuitesTLS13NoAES []uint16

func onlyChaCha20() {
	defaultCipherSuitesTLS13 = []uint16{tls.TLS_CHACHA20_POLY1305_SHA256}
	defaultCipherSuitesTLS13NoAES = []uint16{tls.TLS_CHACHA20_POLY1305_SHA256}
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "quic-go: "+format+"\n", a...)
}

func summary(n int64, secs float64) {
	if secs <= 0 {
		secs = 1e-9
	}
	fmt.Printf("bytes=%d secs=%.3f mbps=%.2f\n", n, secs, float64(n)*8/secs/1e6)
}

func openKeylog(name string) io.Writer {
	if name == "" {
		return nil
	}
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		logf("keylog: %v", err)
		return nil
	}
	return f
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: quic-go-peer server|client [options]")
		os.Exit(2)
	}
	// run.sh sets INTEROP_NO_GSO when it captures the test: on loopback a GSO
	// batch is captured as one oversized datagram, which tshark cannot split
	// into its QUIC packets.
	if os.Getenv("INTEROP_NO_GSO") != "" {
		os.Setenv("QUIC_GO_DISABLE_GSO", "true")
	}
	start := time.Now()
	var err error
	switch os.Args[1] {
	case "server":
		err = runServer(os.Args[2:])
	case "client":
		err = runClient(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, "usage: quic-go-peer server|client [options]")
		os.Exit(2)
	}
	if errors.Is(err, errUnsupported) {
		fmt.Println("unsupported")
		os.Exit(exitUnsupported)
	}
	if err != nil {
		logf("error: %v", err)
		summary(0, time.Since(start).Seconds())
		os.Exit(1)
	}
}

var errUnsupported = errors.New("unsupported")

// ------------------------------------------------------------------ server

type serverStats struct {
	bytes       atomic.Int64
	mu          sync.Mutex
	first, last time.Time
}

// connDone marks the end of a connection: the transfer span ends when the
// client closes, after it has received everything.
func (s *serverStats) connDone() {
	s.mu.Lock()
	if !s.first.IsZero() {
		s.last = time.Now()
	}
	s.mu.Unlock()
}

func (s *serverStats) begin() {
	s.mu.Lock()
	if s.first.IsZero() {
		s.first = time.Now()
	}
	s.mu.Unlock()
}

func runServer(argv []string) error {
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	listen := fs.String("listen", "", "HOST:PORT")
	certFile := fs.String("cert", "", "certificate chain (PEM)")
	keyFile := fs.String("key", "", "private key (PEM)")
	root := fs.String("root", "", "directory to serve")
	retry := fs.Bool("retry", false, "send a Retry to every new client")
	keylog := fs.String("keylog", "", "NSS key log file")
	if err := fs.Parse(argv); err != nil {
		return err
	}
	if *listen == "" || *certFile == "" || *keyFile == "" || *root == "" {
		return errors.New("--listen, --cert, --key and --root are required")
	}
	// run.sh names the case in TESTCASE. quic-go speaks QUIC v2 but has neither the
	// version_information transport parameter nor compatible version negotiation (RFC 9368),
	// which the v2 case is about.
	if os.Getenv("TESTCASE") == "v2" {
		return errUnsupported
	}
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		return err
	}
	tlsConf := &tls.Config{
		Certificates: []tls.Certificate{cert},
		// Both protocols on one port: a connection is served by the ALPN it negotiated.
		NextProtos:   []string{alpnH3, alpn},
		KeyLogWriter: openKeylog(*keylog),
	}
	addr, err := net.ResolveUDPAddr("udp", *listen)
	if err != nil {
		return err
	}
	udp, err := net.ListenUDP("udp", addr)
	if err != nil {
		return err
	}
	tr := &quic.Transport{Conn: udp}
	if *retry {
		// Every connection attempt without a token gets a Retry (RFC 9000 §8.1.2).
		tr.VerifySourceAddress = func(net.Addr) bool { return true }
	}
	ln, err := tr.ListenEarly(tlsConf, &quic.Config{
		Allow0RTT:            true,
		HandshakeIdleTimeout: idleTimeout,
		MaxIdleTimeout:       idleTimeout,
		// A qlog per connection in $QLOGDIR when it is set (run.sh --qlog), none otherwise.
		Tracer: qlog.DefaultConnectionTracer,
	})
	if err != nil {
		return err
	}
	logf("listening on %s retry=%v", udp.LocalAddr(), *retry)

	stats := &serverStats{}
	h3srv := &http3.Server{Handler: fileHandler(*root, stats)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for {
			conn, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			// The server has chosen the ALPN by the time a connection is accepted
			// (its ServerHello is out); this holds for 0-RTT connections too.
			if conn.ConnectionState().TLS.NegotiatedProtocol == alpnH3 {
				go func() {
					h3srv.ServeQUICConn(conn)
					stats.connDone()
				}()
			} else {
				go serveConn(ctx, conn, *root, stats)
			}
		}
	}()

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	cancel()
	h3srv.Close()
	ln.Close()
	tr.Close()
	stats.mu.Lock()
	secs := 0.0
	if !stats.first.IsZero() && !stats.last.IsZero() {
		secs = stats.last.Sub(stats.first).Seconds()
	}
	stats.mu.Unlock()
	summary(stats.bytes.Load(), secs)
	return nil
}

func serveConn(ctx context.Context, conn *quic.Conn, root string, stats *serverStats) {
	for {
		str, err := conn.AcceptStream(ctx)
		if err != nil {
			stats.connDone()
			return
		}
		go serveStream(str, root, stats)
	}
}

// resolve maps an HTTP/0.9 request to a file below root.
func resolve(root string, request []byte) (string, bool) {
	line, _, _ := strings.Cut(string(request), "\n")
	line = strings.TrimSpace(line)
	p, ok := strings.CutPrefix(line, "GET ")
	if !ok {
		return "", false
	}
	if u, err := url.Parse(strings.TrimSpace(p)); err == nil {
		p = u.Path
	}
	clean := path.Clean("/" + p)
	if clean == "/" {
		return "", false
	}
	return filepath.Join(root, filepath.FromSlash(clean)), true
}

// fileHandler serves HTTP/3 requests: GET or HEAD of a file below root, 404
// for anything else that names no file.
func fileHandler(root string, stats *serverStats) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stats.begin()
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		clean := path.Clean("/" + r.URL.Path)
		file := filepath.Join(root, filepath.FromSlash(clean))
		fi, err := os.Stat(file)
		if clean == "/" || err != nil || !fi.Mode().IsRegular() {
			logf("h3 404 for %q", r.URL.Path)
			http.NotFound(w, r)
			return
		}
		body, err := os.ReadFile(file)
		if err != nil {
			logf("%v", err)
			http.Error(w, "cannot read file", http.StatusInternalServerError)
			return
		}
		ctype := mime.TypeByExtension(filepath.Ext(file))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodHead {
			return
		}
		if n, err := w.Write(body); err == nil {
			stats.bytes.Add(int64(n))
		}
	})
}

func serveStream(str *quic.Stream, root string, stats *serverStats) {
	stats.begin()
	request, err := io.ReadAll(io.LimitReader(str, maxRequest))
	if err != nil {
		str.CancelWrite(1)
		return
	}
	file, ok := resolve(root, request)
	if !ok {
		logf("bad request %q", request)
		str.CancelWrite(1)
		return
	}
	body, err := os.ReadFile(file)
	if err != nil {
		logf("%v", err)
		str.CancelWrite(1)
		return
	}
	if _, err := str.Write(body); err != nil {
		return
	}
	str.Close()
	stats.bytes.Add(int64(len(body)))
}

// ------------------------------------------------------------------ client

// ticketCache wraps the TLS session cache to tell when a ticket has arrived.
type ticketCache struct {
	tls.ClientSessionCache
	got  chan struct{}
	once sync.Once
}

func (c *ticketCache) Put(key string, cs *tls.ClientSessionState) {
	c.ClientSessionCache.Put(key, cs)
	if cs != nil {
		c.once.Do(func() { close(c.got) })
	}
}

type target struct {
	addr  string
	host  string
	paths []string
	urls  []string
}

func parseURLs(urls []string) (*target, error) {
	t := &target{}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "https" || u.Hostname() == "" || u.Port() == "" {
			return nil, fmt.Errorf("bad URL %q", raw)
		}
		if t.addr == "" {
			t.addr, t.host = u.Host, u.Hostname()
		} else if t.addr != u.Host {
			return nil, errors.New("all URLs must name the same server")
		}
		p := u.EscapedPath()
		if p == "" {
			p = "/"
		}
		t.paths = append(t.paths, p)
		t.urls = append(t.urls, raw)
	}
	return t, nil
}

func runClient(argv []string) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	ca := fs.String("ca", "", "root CA (PEM)")
	noVerify := fs.Bool("no-verify", false, "do not verify the server certificate")
	out := fs.String("out", "", "download directory")
	testcase := fs.String("case", "transfer", "interop test case")
	keylog := fs.String("keylog", "", "NSS key log file")
	if err := fs.Parse(argv); err != nil {
		return err
	}
	if !cases[*testcase] {
		return errUnsupported
	}
	if *out == "" || (*ca == "") == !*noVerify || fs.NArg() == 0 {
		return errors.New("need --out, exactly one of --ca/--no-verify, and URLs")
	}
	t, err := parseURLs(fs.Args())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	cache := &ticketCache{ClientSessionCache: tls.NewLRUClientSessionCache(8), got: make(chan struct{})}
	tlsConf := &tls.Config{
		ServerName:         t.host,
		NextProtos:         []string{alpn},
		InsecureSkipVerify: *noVerify,
		KeyLogWriter:       openKeylog(*keylog),
		ClientSessionCache: cache,
	}
	if *ca != "" {
		pem, err := os.ReadFile(*ca)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("%s: no certificate", *ca)
		}
		tlsConf.RootCAs = pool
	}
	if *testcase == "chacha20" {
		onlyChaCha20()
	}
	if *testcase == "http3" {
		tlsConf.NextProtos = []string{alpnH3}
	}
	// keyupdate needs nothing: quic-go initiates its first key update after
	// about 100 packets on every connection, early enough for the test.
	quicConf := &quic.Config{
		HandshakeIdleTimeout: idleTimeout,
		MaxIdleTimeout:       idleTimeout,
		Tracer:               qlog.DefaultConnectionTracer,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// A Transport of our own instead of DialAddr's: DialAddr gives the client
	// zero-length connection IDs, which tshark (4.0) cannot follow when it
	// checks the trace.
	udp, err := net.ListenUDP("udp", nil)
	if err != nil {
		return err
	}
	tr := &quic.Transport{Conn: udp, ConnectionIDLength: 8}
	defer tr.Close()
	raddr, err := net.ResolveUDPAddr("udp", t.addr)
	if err != nil {
		return err
	}
	dial := func(early bool) (*quic.Conn, error) {
		if early {
			return tr.DialEarly(ctx, raddr, tlsConf, quicConf)
		}
		return tr.Dial(ctx, raddr, tlsConf, quicConf)
	}

	start := time.Now()
	var total int64
	switch *testcase {
	case "resumption", "zerortt":
		conn, err := dial(false)
		if err != nil {
			return err
		}
		n, err := fetchAll(ctx, conn, t.paths[:1], *out)
		if err == nil {
			select {
			case <-cache.got:
			case <-time.After(5 * time.Second):
				err = errors.New("server sent no session ticket")
			}
		}
		conn.CloseWithError(0, "")
		if err != nil {
			return err
		}
		total += n
		early := *testcase == "zerortt"
		conn, err = dial(early)
		if err != nil {
			return err
		}
		// On an early connection the requests go out as 0-RTT.
		n, err = fetchAll(ctx, conn, t.paths[1:], *out)
		if err == nil {
			<-conn.HandshakeComplete()
			st := conn.ConnectionState()
			if !st.TLS.DidResume {
				err = errors.New("second connection was not resumed")
			} else if early && !st.Used0RTT {
				err = errors.New("server rejected 0-RTT")
			}
		}
		conn.CloseWithError(0, "")
		if err != nil {
			return err
		}
		total += n
	case "http3":
		conn, err := dial(false)
		if err != nil {
			return err
		}
		n, err := fetchAllH3(conn, t, *out)
		conn.CloseWithError(0, "")
		if err != nil {
			return err
		}
		total += n
	default:
		conn, err := dial(false)
		if err != nil {
			return err
		}
		if *testcase == "connectionmigration" {
			if err := migrate(ctx, conn); err != nil {
				conn.CloseWithError(0, "")
				return fmt.Errorf("migration: %w", err)
			}
		}
		n, err := fetchAll(ctx, conn, t.paths, *out)
		conn.CloseWithError(0, "")
		if err != nil {
			return err
		}
		total += n
	}
	summary(total, time.Since(start).Seconds())
	return nil
}

// migrate moves the connection to a new local socket (connectionmigration): once the
// handshake is confirmed (RFC 9000 §9), it probes the new path (PATH_CHALLENGE from a new
// address, with a new connection ID) and switches to it when the probe is answered.
func migrate(ctx context.Context, conn *quic.Conn) error {
	select {
	case <-conn.HandshakeComplete():
	case <-ctx.Done():
		return ctx.Err()
	}
	// HandshakeComplete is the client's own view; the server confirms with HANDSHAKE_DONE,
	// which is in after a round trip (loopback: well under this).
	time.Sleep(100 * time.Millisecond)
	udp, err := net.ListenUDP("udp", nil)
	if err != nil {
		return err
	}
	path, err := conn.AddPath(&quic.Transport{Conn: udp, ConnectionIDLength: 8})
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := path.Probe(pctx); err != nil {
		return err
	}
	if err := path.Switch(); err != nil {
		return err
	}
	logf("migrated to %s", udp.LocalAddr())
	return nil
}

// fetchAll requests every path on its own stream, all at once: the stream
// limit of the server (MAX_STREAMS) makes OpenStreamSync wait where needed.
func fetchAll(ctx context.Context, conn *quic.Conn, paths []string, out string) (int64, error) {
	var wg sync.WaitGroup
	var total atomic.Int64
	errs := make(chan error, len(paths))
	for _, p := range paths {
		wg.Add(1)
		go func(p string) {
			defer wg.Done()
			n, err := fetch(ctx, conn, p, out)
			if err != nil {
				errs <- fmt.Errorf("%s: %w", p, err)
				return
			}
			total.Add(n)
		}(p)
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return total.Load(), nil
}

func fetch(ctx context.Context, conn *quic.Conn, p string, out string) (int64, error) {
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return 0, err
	}
	if _, err := str.Write([]byte("GET " + p + "\r\n")); err != nil {
		return 0, err
	}
	str.Close()
	body, err := io.ReadAll(io.LimitReader(str, maxResponse+1))
	if err != nil {
		return 0, err
	}
	if len(body) > maxResponse {
		return 0, errors.New("response too large")
	}
	name, _ := url.PathUnescape(path.Base(p))
	if name == "/" || name == "." || name == "" {
		name = "index.html"
	}
	if err := os.WriteFile(filepath.Join(out, name), body, 0o644); err != nil {
		return 0, err
	}
	return int64(len(body)), nil
}

// fetchAllH3 GETs every URL over HTTP/3 on the one QUIC connection, all at once.
func fetchAllH3(conn *quic.Conn, t *target, out string) (int64, error) {
	// A ClientConn on our connection rather than Transport.RoundTrip's own dialing:
	// that keeps the 8-byte connection IDs (see runClient) and makes sure that every
	// request shares the one connection.
	h3tr := &http3.Transport{DisableCompression: true}
	cc := h3tr.NewClientConn(conn)
	var wg sync.WaitGroup
	var total atomic.Int64
	errs := make(chan error, len(t.urls))
	for i, raw := range t.urls {
		wg.Add(1)
		go func(raw, p string) {
			defer wg.Done()
			n, err := fetchH3(cc, raw, p, out)
			if err != nil {
				errs <- fmt.Errorf("%s: %w", p, err)
				return
			}
			total.Add(n)
		}(raw, t.paths[i])
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	return total.Load(), nil
}

func fetchH3(cc *http3.ClientConn, raw, p, out string) (int64, error) {
	req, err := http.NewRequest(http.MethodGet, raw, nil)
	if err != nil {
		return 0, err
	}
	resp, err := cc.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("HTTP status %d", resp.StatusCode)
	}
	// Reading to io.EOF means the response stream ended with FIN; a reset or a
	// connection error surfaces as another error.
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return 0, err
	}
	if len(body) > maxResponse {
		return 0, errors.New("response too large")
	}
	name, _ := url.PathUnescape(path.Base(p))
	if name == "/" || name == "." || name == "" {
		name = "index.html"
	}
	if err := os.WriteFile(filepath.Join(out, name), body, 0o644); err != nil {
		return 0, err
	}
	return int64(len(body)), nil
}
