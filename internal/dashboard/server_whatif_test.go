package dashboard

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// One replay at a time: a second asker is told to try again, before its
// body is read; and only JSON is taken.
func TestWhatIfTakesOneReplayAtATimeAndOnlyJSON(t *testing.T) {
	s := &Server{}
	ask := func(contentType string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/api/whatif", strings.NewReader(`{"trace":""}`))
		req.Header.Set("Content-Type", contentType)
		w := httptest.NewRecorder()
		s.whatIf(w, req)
		return w
	}
	if w := ask("text/plain"); w.Code != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: %d %s; want 415", w.Code, w.Body)
	}
	s.replaying.Lock()
	if w := ask("application/json"); w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), "another replay is running") {
		t.Errorf("while another replay runs: %d %s; want 429", w.Code, w.Body)
	}
	s.replaying.Unlock()
	if w := ask("application/json; charset=utf-8"); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "trace: required") {
		t.Errorf("once it is done: %d %s; want the request read and refused for what it lacks", w.Code, w.Body)
	}
}
