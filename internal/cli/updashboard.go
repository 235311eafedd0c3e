package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/berth-dev/berth/internal/controller"
	"github.com/berth-dev/berth/internal/dashboard"
)

// dashboardURLFile, in an instance's data directory, holds the URL of the
// dashboard its supervisor serves, while it serves it.
const dashboardURLFile = "dashboard-url"

// serveDashboard serves the dashboard of the instance kubeconfig reaches,
// on a free loopback port, until ctx ends; it records the URL in dir (for
// its owner alone) for `berth up --detach` to print, and returns it. The
// URL carries a token made for this run, which the dashboard asks of every
// visitor: any user of the machine reaches the port, only those given the
// URL get in. Its watch starts with the first page opened
// (dashboard.Lazily).
func serveDashboard(ctx context.Context, kubeconfig, dir string, logs io.Writer) (string, error) {
	ctrllog.SetLogger(zap.New(zap.WriteTo(logs))) // the watch's errors
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return "", err
	}
	srv, err := dashboard.New(cfg, controller.Scheme())
	if err != nil {
		return "", err
	}
	token, err := dashboard.NewToken()
	if err != nil {
		return "", err
	}
	srv.RequireToken(token)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	url := dashboard.TokenURL(fmt.Sprintf("http://%s/", ln.Addr()), token)
	file := filepath.Join(dir, dashboardURLFile)
	if err := os.WriteFile(file, []byte(url+"\n"), 0o600); err != nil {
		ln.Close()
		return "", err
	}
	hs := &http.Server{Handler: dashboard.Lazily(ctx, srv), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = os.Remove(file)
		_ = hs.Close()
	}()
	go func() { _ = hs.Serve(ln) }()
	return url, nil
}

// dashboardURL is the URL an instance's supervisor recorded, "" if none.
func dashboardURL(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, dashboardURLFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
