package controller

import (
	"strings"
	"testing"
	"time"
)

// Negative multicluster timings are refused, naming the flag, rather than
// read as "at once" or "never wait".
func TestNegativeDispatchTimingsAreRefused(t *testing.T) {
	if err := DefaultOptions().checkDispatch(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
	zero := DefaultOptions()
	zero.DispatchSpreadAfter = 0
	if err := zero.checkDispatch(); err != nil {
		t.Errorf("--dispatch-spread-after=0s (copies to all at once): %v", err)
	}
	for flag, set := range map[string]func(*Options){
		"--worker-lost-timeout":   func(o *Options) { o.WorkerLostTimeout = -time.Second },
		"--dispatch-spread-after": func(o *Options) { o.DispatchSpreadAfter = -time.Second },
	} {
		o := DefaultOptions()
		set(&o)
		if err := o.checkDispatch(); err == nil || !strings.HasPrefix(err.Error(), flag+" -1s") {
			t.Errorf("%s -1s: %v; want it refused, naming the flag", flag, err)
		}
	}
}
