package dashboard

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Serving is where and how the dashboard is served: on loopback as it is,
// or, on any other address, over TLS and only to those who give its token.
type Serving struct {
	Listen            string
	CertFile, KeyFile string
	// Token, when set, is asked of every visitor (Server.RequireToken).
	Token string
}

// MinTokenLength is the shortest token the dashboard takes: one anyone may
// guess is no gate.
const MinTokenLength = 16

// Check refuses a way of serving that could expose the dashboard: an
// address other than loopback without both TLS and a token, half of a
// certificate, or a short token. The host must be an IP address or
// "localhost"; an empty port or 0 picks a free one.
func (s Serving) Check() error {
	host, _, err := net.SplitHostPort(s.Listen)
	if err != nil {
		return fmt.Errorf("--listen %q: %v (want HOST:PORT, e.g. 127.0.0.1:8080)", s.Listen, err)
	}
	if (s.CertFile == "") != (s.KeyFile == "") {
		return errors.New("--tls-cert-file and --tls-key-file: give both, or neither")
	}
	if s.Token != "" && len(s.Token) < MinTokenLength {
		return fmt.Errorf("--token-file: the token has %d characters; want at least %d (openssl rand -hex 32 makes one)", len(s.Token), MinTokenLength)
	}
	if isLoopback(host) {
		return nil
	}
	if s.CertFile == "" || s.Token == "" {
		return fmt.Errorf("--listen %q: beyond loopback (127.0.0.1, ::1, localhost) the dashboard is served only over TLS and "+
			"to those who give its token: add --tls-cert-file, --tls-key-file and --token-file, or reach it through kubectl port-forward or an SSH tunnel", s.Listen)
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tokenCookie carries the token a visitor gave at /login.
const tokenCookie = "berth-dashboard-token"

// tokenParam is the query parameter a URL gives the token in: the URL
// `berth up` and `berth dashboard` print carries it, as Jupyter's does.
const tokenParam = "token"

// RequireToken makes every request but /login give token: in the cookie
// set once the visitor has given it (at /login, or in a URL's ?token=), or
// in the request's own ?token= (for scripts: curl URL/api/tree?token=...).
// Requests may then name any host: the token, not the address, keeps others
// out. Call it before Handler.
func (s *Server) RequireToken(token string) { s.token = token }

// NewToken is a token for RequireToken that nobody guesses: 32 random
// bytes, in hex.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// TokenURL is the URL of the dashboard at base (ending in /) that gives
// token: opened, it lets its visitor in.
func TokenURL(base, token string) string {
	return base + "?" + url.Values{tokenParam: {token}}.Encode()
}

// gate lets through requests that carry the token and serves /login, where
// a visitor gives it; anything else is sent there (a page) or refused (the
// API). A page asked for with the token in its URL sets the cookie and
// sends the browser to the page without it, so the token does not stay in
// the address bar.
func (s *Server) gate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" {
			s.login(w, r)
			return
		}
		if c, err := r.Cookie(tokenCookie); err == nil && s.tokenIs(c.Value) {
			next.ServeHTTP(w, r)
			return
		}
		if q := r.URL.Query(); q.Has(tokenParam) && s.tokenIs(q.Get(tokenParam)) {
			if strings.HasPrefix(r.URL.Path, "/api/") || r.Method != http.MethodGet {
				next.ServeHTTP(w, r)
				return
			}
			// Always to the page itself: a path taken from the request
			// ("//elsewhere.example") would make this an open redirect. The
			// page keeps its views in the URL's fragment, which the
			// browser keeps.
			s.setCookie(w)
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/api/") {
			http.Error(w, "this dashboard asks for its token: open /login in a browser", http.StatusUnauthorized)
			return
		}
		http.Redirect(w, r, "/login", http.StatusSeeOther)
	})
}

func (s *Server) tokenIs(v string) bool {
	return subtle.ConstantTimeCompare([]byte(v), []byte(s.token)) == 1
}

// setCookie gives the visitor the token's cookie. Secure always: beyond
// loopback the dashboard is served over TLS only, and browsers keep Secure
// cookies of http://127.0.0.1 and localhost.
func (s *Server) setCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: s.token, Path: "/", HttpOnly: true,
		Secure: true, SameSite: http.SameSiteStrictMode})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	msg := ""
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, 4096)
		if s.tokenIs(r.PostFormValue("token")) {
			s.setCookie(w)
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		msg = "That is not this dashboard's token."
	} else if r.Method != http.MethodGet {
		http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>berth</title></head>
<body><h1>berth</h1><p>This dashboard asks for its token: open the URL that berth up or berth dashboard printed (it carries the token), or give the token here (the one in the file given to --token-file).</p>
<p>%s</p>
<form method="post" action="/login"><input name="token" type="password" autocomplete="off" autofocus> <button>Open</button></form>
</body></html>
`, html.EscapeString(msg))
}
