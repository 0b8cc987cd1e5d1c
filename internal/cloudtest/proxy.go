package cloudtest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
)

// Proxy is a loopback HTTP reverse proxy in front of a test server that can add a fixed
// delay to every request (simulating a region's round trip), strip request headers
// (simulating a store that ignores conditional writes), answer some requests itself
// (injecting errors), fail requests in transit (SetFault: 503s, resets, bodies cut
// short, responses lost after the request was applied), and counts the requests it
// forwards by kind.
type Proxy struct {
	// URL is the proxy's base URL (http://127.0.0.1:PORT).
	URL string

	srv    *http.Server
	target *url.URL
	delay  time.Duration
	strip  []string

	mu     sync.Mutex
	inject func(r *http.Request) (status int, body string, ok bool)
	fault  func(r *http.Request) Fault
	faults map[Fault]int64
	counts map[string]int64
	bytes  atomic.Int64
}

// Fault is what the proxy does to a request instead of forwarding it plainly.
type Fault int

const (
	// NoFault forwards the request and its answer.
	NoFault Fault = iota
	// Fault503 answers 503 SlowDown without forwarding: the request is not applied.
	Fault503
	// FaultReset resets the connection without forwarding: not applied, no answer.
	FaultReset
	// FaultCutBody forwards the request, then sends the answer's status, headers and
	// half its body, and resets the connection: applied, the body cut short.
	FaultCutBody
	// FaultLoseResponse forwards the request and resets the connection without
	// answering: applied, the answer lost.
	FaultLoseResponse
)

// String names the fault.
func (f Fault) String() string {
	return [...]string{"none", "503", "reset", "cut body", "lost response"}[f]
}

// ProxyOptions configures NewProxy.
type ProxyOptions struct {
	// Delay is added before forwarding each request.
	Delay time.Duration
	// StripHeaders are removed from every request that has them (e.g.
	// "If-None-Match"), which is then signed again (AWS SigV4, with the credentials of
	// the environment) because the client signed the header.
	StripHeaders []string
}

// NewProxy starts a proxy to target (a base URL) on a free loopback port; the test's
// cleanup stops it.
func NewProxy(t testing.TB, target string, opts ProxyOptions) *Proxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		if u, err = url.Parse("http://" + target); err != nil {
			t.Fatalf("proxy target %q: %v", target, err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{URL: "http://" + ln.Addr().String(), target: u, delay: opts.Delay, strip: opts.StripHeaders,
		counts: map[string]int64{}, faults: map[Fault]int64{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.ContentLength > 0 {
			p.bytes.Add(resp.ContentLength)
		}
		return nil
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.delay > 0 {
			time.Sleep(p.delay)
		}
		p.count(r)
		stripped := false
		for _, h := range p.strip {
			if r.Header.Get(h) != "" {
				r.Header.Del(h)
				stripped = true
			}
		}
		if stripped {
			if err := resign(r); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		p.mu.Lock()
		inject, fault := p.inject, p.fault
		p.mu.Unlock()
		if inject != nil {
			if status, body, ok := inject(r); ok {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(status)
				w.Write([]byte(body))
				return
			}
		}
		if fault != nil {
			if f := fault(r); f != NoFault {
				p.mu.Lock()
				p.faults[f]++
				p.mu.Unlock()
				p.fail(w, r, f)
				return
			}
		}
		rp.ServeHTTP(w, r)
	})}
	go p.srv.Serve(ln)
	t.Cleanup(func() { p.srv.Close() })
	return p
}

// SetFault installs a function that picks a fault for each request (nil: none).
func (p *Proxy) SetFault(f func(r *http.Request) Fault) {
	p.mu.Lock()
	p.fault = f
	p.mu.Unlock()
}

// Faults returns how many faults of each kind the proxy injected.
func (p *Proxy) Faults() map[Fault]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[Fault]int64, len(p.faults))
	for k, v := range p.faults {
		out[k] = v
	}
	return out
}

// fail carries out fault f on r.
func (p *Proxy) fail(w http.ResponseWriter, r *http.Request, f Fault) {
	if f == Fault503 {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>injected by the test proxy</Message></Error>`))
		return
	}
	var (
		resp *http.Response
		body []byte
	)
	if f == FaultCutBody || f == FaultLoseResponse {
		out := r.Clone(r.Context())
		out.URL.Scheme, out.URL.Host = p.target.Scheme, p.target.Host
		out.RequestURI = ""
		var err error
		if resp, err = http.DefaultTransport.RoundTrip(out); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "the proxy cannot hijack the connection", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	if f == FaultCutBody && len(body) >= 2 {
		resp.Header.Del("Transfer-Encoding")
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		fmt.Fprintf(buf, "HTTP/1.1 %s\r\n", resp.Status)
		resp.Header.Write(buf)
		buf.WriteString("\r\n")
		buf.Write(body[:len(body)/2])
		buf.Flush()
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0) // a reset, not an orderly close
	}
	conn.Close()
}

// SetInject installs a function that may answer a request instead of the server.
func (p *Proxy) SetInject(f func(r *http.Request) (status int, body string, ok bool)) {
	p.mu.Lock()
	p.inject = f
	p.mu.Unlock()
}

// Kind classifies an S3 request: GET, HEAD, LIST (a GET of a bucket with list-type
// or prefix), PUT, POST, DELETE.
func Kind(r *http.Request) string {
	if r.Method == http.MethodGet {
		q := r.URL.Query()
		path := strings.Trim(r.URL.Path, "/")
		if q.Has("list-type") || q.Has("prefix") || !strings.Contains(path, "/") {
			return "LIST"
		}
	}
	return r.Method
}

func (p *Proxy) count(r *http.Request) {
	p.mu.Lock()
	p.counts[Kind(r)]++
	p.mu.Unlock()
}

// Counts returns the requests forwarded so far by kind, and the response body bytes.
func (p *Proxy) Counts() (map[string]int64, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := make(map[string]int64, len(p.counts))
	for k, v := range p.counts {
		c[k] = v
	}
	return c, p.bytes.Load()
}

// Reset zeroes the counters.
func (p *Proxy) Reset() {
	p.mu.Lock()
	p.counts = map[string]int64{}
	p.mu.Unlock()
	p.bytes.Store(0)
}

// Total returns the number of requests forwarded so far.
func (p *Proxy) Total() int64 {
	c, _ := p.Counts()
	var n int64
	for _, v := range c {
		n += v
	}
	return n
}

// resign signs r again with SigV4 after the proxy changed its headers.
func resign(r *http.Request) error {
	cfg, err := config.LoadDefaultConfig(r.Context(), config.WithRegion("us-east-1"))
	if err != nil {
		return err
	}
	creds, err := cfg.Credentials.Retrieve(r.Context())
	if err != nil {
		return err
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		when = time.Now()
	}
	r.Header.Del("Authorization")
	return v4.NewSigner().SignHTTP(r.Context(), creds, r, r.Header.Get("X-Amz-Content-Sha256"), "s3", "us-east-1", when)
}
