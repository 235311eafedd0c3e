package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/dashboard"
)

const token = "0123456789abcdef0123"

// Loopback is served as it is; any other address only with TLS and a
// token; a half certificate or a short token is refused anywhere.
func TestServingCheck(t *testing.T) {
	tls := func(s dashboard.Serving) dashboard.Serving { s.CertFile, s.KeyFile = "c.pem", "k.pem"; return s }
	for _, c := range []struct {
		s    dashboard.Serving
		want string // "" allowed, else in the error
	}{
		{dashboard.Serving{Listen: "127.0.0.1:0"}, ""},
		{dashboard.Serving{Listen: "localhost:8080"}, ""},
		{dashboard.Serving{Listen: "[::1]:9000"}, ""},
		{dashboard.Serving{Listen: "127.0.0.1"}, "want HOST:PORT"},
		{dashboard.Serving{Listen: "0.0.0.0:8080"}, "--tls-cert-file, --tls-key-file and --token-file"},
		{dashboard.Serving{Listen: ":8080"}, "--tls-cert-file, --tls-key-file and --token-file"},
		{dashboard.Serving{Listen: "example.com:443", Token: token}, "--tls-cert-file"},
		{tls(dashboard.Serving{Listen: "10.0.0.1:443"}), "--token-file"},
		{tls(dashboard.Serving{Listen: "10.0.0.1:443", Token: token}), ""},
		{tls(dashboard.Serving{Listen: "[2001:db8::1]:443", Token: token}), ""},
		{dashboard.Serving{Listen: "127.0.0.1:0", CertFile: "c.pem"}, "give both"},
		{dashboard.Serving{Listen: "127.0.0.1:0", Token: "short"}, "at least 16"},
		{dashboard.Serving{Listen: "127.0.0.1:0", Token: token}, ""},
	} {
		err := c.s.Check()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v; want %q", c.s, err, c.want)
		}
	}
}

func serve(h http.Handler, method, path, host, cookie string, form url.Values) *httptest.ResponseRecorder {
	var req *http.Request
	if form != nil {
		req = httptest.NewRequest(method, path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req = httptest.NewRequest(method, path, nil)
	}
	req.Host = host
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// With a token, a visitor is sent to /login; the wrong token is refused;
// the right one sets a cookie that opens the page and the API, from any
// host name; the API without it answers 401, not the page.
func TestTokenGatesEverythingButLogin(t *testing.T) {
	var s dashboard.Server
	s.RequireToken(token)
	h := s.Handler()
	const host = "dashboard.example.com"

	if rec := serve(h, http.MethodGet, "/", host, "", nil); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/login" {
		t.Errorf("the page without the token: %d to %q; want 303 to /login", rec.Code, rec.Header().Get("Location"))
	}
	if rec := serve(h, http.MethodGet, "/api/config", host, "", nil); rec.Code != http.StatusUnauthorized {
		t.Errorf("the API without the token: %d; want 401", rec.Code)
	}
	if rec := serve(h, http.MethodGet, "/api/config", host, "berth-dashboard-token=wrong", nil); rec.Code != http.StatusUnauthorized {
		t.Errorf("the API with a wrong cookie: %d; want 401", rec.Code)
	}
	if rec := serve(h, http.MethodGet, "/login", host, "", nil); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `name="token"`) ||
		rec.Header().Get("Content-Security-Policy") == "" {
		t.Errorf("GET /login: %d %q; want the form, with the page's policy", rec.Code, rec.Body.String())
	}
	if rec := serve(h, http.MethodPost, "/login", host, "", url.Values{"token": {"wrong-wrong-wrong"}}); rec.Code != http.StatusUnauthorized ||
		len(rec.Result().Cookies()) != 0 {
		t.Errorf("POST /login with a wrong token: %d, cookies %v; want 401 and none", rec.Code, rec.Result().Cookies())
	}
	rec := serve(h, http.MethodPost, "/login", host, "", url.Values{"token": {token}})
	cookies := rec.Result().Cookies()
	if rec.Code != http.StatusSeeOther || len(cookies) != 1 || !cookies[0].HttpOnly || !cookies[0].Secure || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("POST /login with the token: %d, cookies %+v; want 303 and one HttpOnly, Secure, SameSite=Strict cookie", rec.Code, cookies)
	}
	cookie := cookies[0].Name + "=" + cookies[0].Value
	if rec := serve(h, http.MethodGet, "/", host, cookie, nil); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "app.js") {
		t.Errorf("the page with the cookie, from host %s: %d", host, rec.Code)
	}
	if rec := serve(h, http.MethodGet, "/api/config", host, cookie, nil); rec.Code != http.StatusOK {
		t.Errorf("the API with the cookie: %d", rec.Code)
	}
}

// The URL berth up and berth dashboard print carries the token, as
// Jupyter's does: a page asked for with it sets the cookie and is asked for
// again without it; the API takes it in the query alone (for scripts); a
// wrong one is refused as none.
func TestTokenInTheURL(t *testing.T) {
	var s dashboard.Server
	s.RequireToken(token)
	h := s.Handler()
	const host = "127.0.0.1:8080"
	link := dashboard.TokenURL("/", token)
	if link != "/?token="+token {
		t.Fatalf("TokenURL = %q", link)
	}
	rec := serve(h, http.MethodGet, link, host, "", nil)
	cookies := rec.Result().Cookies()
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/" || len(cookies) != 1 || cookies[0].Value != token ||
		!cookies[0].HttpOnly || !cookies[0].Secure || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Errorf("GET %s: %d to %q, cookies %+v; want 303 to / with the token's cookie", link, rec.Code, rec.Header().Get("Location"), cookies)
	}
	// Always to the page: never to a path of the request's, which a link
	// could make another site's.
	if rec := serve(h, http.MethodGet, "//elsewhere.example/?token="+token, host, "", nil); rec.Header().Get("Location") != "/" {
		t.Errorf("a token URL with another site for its path: to %q; want /", rec.Header().Get("Location"))
	}
	if rec := serve(h, http.MethodGet, "/api/config?token="+token, host, "", nil); rec.Code != http.StatusOK || len(rec.Result().Cookies()) != 0 {
		t.Errorf("the API with the token in its query: %d, cookies %v; want 200 and none", rec.Code, rec.Result().Cookies())
	}
	for _, bad := range []string{"/?token=wrong", "/api/config?token=", "/api/config?token=" + token[:len(token)-1]} {
		rec := serve(h, http.MethodGet, bad, host, "", nil)
		if rec.Code == http.StatusOK || len(rec.Result().Cookies()) != 0 {
			t.Errorf("GET %s: %d, cookies %v; want refused", bad, rec.Code, rec.Result().Cookies())
		}
	}
	if a, err := dashboard.NewToken(); err != nil || len(a) != 64 {
		t.Errorf("NewToken = %q, %v; want 64 hex characters", a, err)
	} else if b, _ := dashboard.NewToken(); a == b {
		t.Error("NewToken made the same token twice")
	}
}
