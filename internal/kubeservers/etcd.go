package kubeservers

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
)

// runEtcd runs a single-member etcd server. Only the handful of settings a local
// control plane needs are exposed; everything else keeps etcd's defaults.
func runEtcd(args []string) int {
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	name := fs.String("name", "berth", "member name")
	dataDir := fs.String("data-dir", "", "data directory (required)")
	clientURL := fs.String("listen-client-url", "", "URL to serve clients on, e.g. http://127.0.0.1:2379 (required)")
	peerURL := fs.String("listen-peer-url", "", "URL to serve raft peers on (required; nothing joins, but etcd needs one)")
	quota := fs.Int64("quota-backend-bytes", 8<<30, "backend size before etcd raises a NOSPACE alarm")
	noFsync := fs.Bool("unsafe-no-fsync", false, "skip fsync: faster, but a machine crash (not a process crash) may lose recent writes")
	certFile := fs.String("cert-file", "", "serving certificate for clients (with an https client URL)")
	keyFile := fs.String("key-file", "", "its key")
	trustedCA := fs.String("trusted-ca-file", "", "CA that signs the client certificates etcd accepts: with an https client URL, it wants one")
	peerCertFile := fs.String("peer-cert-file", "", "certificate for peers (with an https peer URL)")
	peerKeyFile := fs.String("peer-key-file", "", "its key")
	peerTrustedCA := fs.String("peer-trusted-ca-file", "", "CA that signs the peer certificates etcd accepts")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dataDir == "" || *clientURL == "" || *peerURL == "" {
		fmt.Fprintln(os.Stderr, "etcd: --data-dir, --listen-client-url and --listen-peer-url are required")
		return 2
	}
	cu, err := url.Parse(*clientURL)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: --listen-client-url: %v\n", err)
		return 2
	}
	pu, err := url.Parse(*peerURL)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: --listen-peer-url: %v\n", err)
		return 2
	}

	// Over https, only with certificates: a client, or a peer, must show one
	// the trusted CA signed.
	clientTLS := transport.TLSInfo{CertFile: *certFile, KeyFile: *keyFile, TrustedCAFile: *trustedCA, ClientCertAuth: true}
	peerTLS := transport.TLSInfo{CertFile: *peerCertFile, KeyFile: *peerKeyFile, TrustedCAFile: *peerTrustedCA, ClientCertAuth: true}
	for _, c := range []struct {
		url  *url.URL
		info transport.TLSInfo
		flag string
	}{{cu, clientTLS, "--cert-file, --key-file and --trusted-ca-file"}, {pu, peerTLS, "--peer-cert-file, --peer-key-file and --peer-trusted-ca-file"}} {
		if c.url.Scheme == "https" && (c.info.CertFile == "" || c.info.KeyFile == "" || c.info.TrustedCAFile == "") {
			fmt.Fprintf(os.Stderr, "etcd: %s needs %s\n", c.url, c.flag)
			return 2
		}
	}

	cfg := embed.NewConfig()
	if cu.Scheme == "https" {
		cfg.ClientTLSInfo = clientTLS
	}
	if pu.Scheme == "https" {
		cfg.PeerTLSInfo = peerTLS
	}
	cfg.Name = *name
	cfg.Dir = *dataDir
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.QuotaBackendBytes = *quota
	cfg.UnsafeNoFsync = *noFsync
	cfg.LogOutputs = []string{"stderr"}
	// At "warn" etcd logs every request's stats, which floods the log under load.
	cfg.LogLevel = "error"

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: start: %v\n", err)
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-e.Server.ReadyNotify():
		fmt.Fprintf(os.Stderr, "etcd: ready, serving clients on %s\n", cu)
	case err := <-e.Err():
		fmt.Fprintf(os.Stderr, "etcd: %v\n", err)
		e.Close()
		return 1
	case <-time.After(60 * time.Second):
		fmt.Fprintln(os.Stderr, "etcd: not ready after 60s")
		e.Close()
		return 1
	case <-sig:
		e.Close()
		return 0
	}
	select {
	case err := <-e.Err():
		fmt.Fprintf(os.Stderr, "etcd: %v\n", err)
		e.Close()
		return 1
	case <-sig:
		e.Close()
		fmt.Fprintln(os.Stderr, "etcd: stopped")
		return 0
	}
}
