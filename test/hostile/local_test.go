package hostile

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/berth-dev/berth/internal/controlplane"
	"github.com/berth-dev/berth/internal/testenv"
)

// Another user of the machine that runs `berth up` reaches etcd's ports on
// loopback, but reads and writes nothing there: etcd speaks only TLS and
// wants a client certificate its own CA signed. Plain HTTP, TLS without a
// certificate, and the ordinary CA's certificates (even the admin's, whom
// the API server would let do anything) are all refused; kube-apiserver's
// etcd certificate is let in, so the refusals are not a broken server.
func TestEtcdWantsItsOwnCredentials(t *testing.T) {
	inst := testenv.Instance()
	if inst == nil {
		t.Fatal("needs the control plane testenv starts: it talks to its etcd")
	}
	l := inst.Layout()
	url := fmt.Sprintf("127.0.0.1:%d", inst.State().Ports.EtcdClient)

	// Plain HTTP, as etcd served before.
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + url + "/v3/kv/range")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("etcd answered plain HTTP with %s", resp.Status)
		}
	}

	good, err := controlplane.EtcdTLS(l)
	if err != nil {
		t.Fatal(err)
	}
	get := func(tlsConfig *tls.Config) error {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{"https://" + url}, TLS: tlsConfig, DialTimeout: 5 * time.Second})
		if err != nil {
			return err
		}
		defer c.Close()
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		_, err = c.Get(cctx, "/registry/secrets/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		return err
	}
	if err := get(good); err != nil {
		t.Fatalf("kube-apiserver's etcd certificate is refused: %v", err)
	}
	noCert := good.Clone()
	noCert.Certificates = nil
	if err := get(noCert); err == nil {
		t.Error("etcd answered a client without a certificate")
	}
	for _, who := range []string{"admin", "berth-controller", "berth-sim"} {
		cert, err := tls.LoadX509KeyPair(l.PKI(who+".crt"), l.PKI(who+".key"))
		if err != nil {
			t.Fatal(err)
		}
		other := good.Clone()
		other.Certificates = []tls.Certificate{cert}
		if err := get(other); err == nil {
			t.Errorf("etcd answered a client with %s's certificate of the ordinary CA", who)
		}
	}
}
