package cloudtest

import (
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a loopback HTTP reverse proxy in front of a test server that can add a fixed
// delay to every request (simulating a region's round trip), strip request headers
// (simulating a store that ignores conditional writes), answer some requests itself
// (injecting errors), and counts the requests it forwards by kind.
type Proxy struct {
	// URL is the proxy's base URL (http://127.0.0.1:PORT).
	URL string

	srv   *http.Server
	delay time.Duration
	strip []string

	mu     sync.Mutex
	inject func(r *http.Request) (status int, body string, ok bool)
	counts map[string]int64
	bytes  atomic.Int64
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
	p := &Proxy{URL: "http://" + ln.Addr().String(), delay: opts.Delay, strip: opts.StripHeaders, counts: map[string]int64{}}
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
		inject := p.inject
		p.mu.Unlock()
		if inject != nil {
			if status, body, ok := inject(r); ok {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(status)
				w.Write([]byte(body))
				return
			}
		}
		rp.ServeHTTP(w, r)
	})}
	go p.srv.Serve(ln)
	t.Cleanup(func() { p.srv.Close() })
	return p
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
