package testenv

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// Eventually calls cond every 50ms until it returns nil, and fails the test with
// cond's last error if that has not happened within timeout. Tests wait with it
// instead of sleeping.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true within %s: %v", timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Consistently calls cond every 50ms for d and fails the test the first time
// it returns an error. It shows that something does not happen in reply to
// a change the test made just before; prefer Eventually on a positive sign
// where there is one.
func Consistently(t testing.TB, d time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if err := cond(); err != nil {
			t.Fatalf("stopped holding: %v", err)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// GetJSON reads url's JSON answer into v; an answer other than 200 OK is
// an error with its body.
func GetJSON(url string, v any) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 1024))
		return fmt.Errorf("GET %s: %s: %s", url, res.Status, body)
	}
	return json.NewDecoder(res.Body).Decode(v)
}
