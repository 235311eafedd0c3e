package testenv

import (
	"context"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"k8s.io/client-go/rest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/berth-dev/berth/internal/controller"
	"github.com/berth-dev/berth/internal/dashboard"
)

// Dashboard serves berth's dashboard of the cluster cfg reaches on a
// loopback port for the test, set up by opts (such as
// (*dashboard.Server).AllowActions), and returns its URL.
func Dashboard(t testing.TB, cfg *rest.Config, opts ...func(*dashboard.Server)) string {
	t.Helper()
	ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr))) // the watch's errors, as berth dashboard logs them
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := dashboard.New(cfg, controller.Scheme())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range opts {
		o(srv)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return hs.URL + "/"
}

// Chromium is Debian's Chromium, which .ci/run installs.
const Chromium = "/usr/bin/chromium"

// Browser starts headless Chromium for the test; it ends with the test, or
// after three minutes.
func Browser(t testing.TB) context.Context {
	t.Helper()
	if _, err := os.Stat(Chromium); err != nil {
		t.Fatalf("the dashboard is tested in Debian's Chromium: %v (apt-get install chromium; .ci/run does)", err)
	}
	// Chromium's scratch directories (org.chromium.Chromium.*, which hold
	// its singleton socket) go to a directory removed once it has stopped,
	// not to /tmp for good; a short one, as a socket's path is.
	scratch, err := os.MkdirTemp("", "cr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(scratch) }) // after the browser's own cleanup below
	// No network but loopback here: Chromium's own calls home are turned off.
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(Chromium), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-quic", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 900),
		chromedp.Env("TMPDIR="+scratch))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

// WaitText polls the page until the element selector names has text
// holding want.
func WaitText(t testing.TB, ctx context.Context, timeout time.Duration, selector, want string) {
	t.Helper()
	Eventually(t, timeout, func() error {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		got, err := chromedp.Run(sctx, chromedp.Text(chromedp.CSS(selector)))
		if err != nil {
			return fmt.Errorf("%s: %v", selector, err)
		}
		if !strings.Contains(got, want) {
			return fmt.Errorf("%s says %q; want %q in it", selector, got, want)
		}
		return nil
	})
}

// ClickUntil clicks selector until the text of check holds want: pages
// drawn again on every change in the cluster can replace the element
// under a single click.
func ClickUntil(t testing.TB, ctx context.Context, timeout time.Duration, selector, check, want string) {
	t.Helper()
	Eventually(t, timeout, func() error {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if _, err := chromedp.Run(sctx, chromedp.Click(chromedp.CSS(selector))); err != nil {
			return err
		}
		got, err := chromedp.Run(sctx, chromedp.Text(chromedp.CSS(check)))
		if err != nil || !strings.Contains(got, want) {
			return fmt.Errorf("%s says %q (%v) after a click on %s; want %q", check, got, err, selector, want)
		}
		return nil
	})
}

// screenshots, when set, is where tests save what the browser saw
// (docs/img keeps the ones docs/dashboard.md shows).
var screenshots = flag.String("screenshots", "", "directory to save the dashboard's screenshots in")

// Screenshot saves the page as name when -screenshots names a directory.
func Screenshot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	if *screenshots == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*screenshots, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
