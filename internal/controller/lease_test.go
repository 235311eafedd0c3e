package controller

import (
	"strings"
	"testing"
	"time"
)

func TestLeaseTimingsThatCouldLetTwoLeadAreRefused(t *testing.T) {
	s := time.Second
	if err := DefaultLease().Validate(); err != nil {
		t.Errorf("the default: %v", err)
	}
	if err := (Lease{Duration: 6 * s, RenewDeadline: 4 * s, RetryPeriod: s}).Validate(); err != nil {
		t.Errorf("a short lease: %v", err)
	}
	for _, tc := range []struct {
		lease Lease
		want  string
	}{
		{Lease{Duration: 10 * s, RenewDeadline: 10 * s, RetryPeriod: 2 * s}, "--leader-elect-lease-duration 10s: must be longer than --leader-elect-renew-deadline 10s"},
		{Lease{Duration: 15 * s, RenewDeadline: 2 * s, RetryPeriod: 2 * s}, "--leader-elect-renew-deadline 2s: must be longer than --leader-elect-retry-period 2s"},
		{Lease{Duration: 15 * s, RenewDeadline: 10 * s}, "--leader-elect-retry-period 0s: must be positive"},
	} {
		err := tc.lease.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.lease, err, tc.want)
		}
	}
}
