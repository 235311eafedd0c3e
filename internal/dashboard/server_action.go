package dashboard

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
	"github.com/berth-dev/berth/internal/stop"
)

// act does the Action a page asks for, with the client of the user whose
// token comes with it: the API server decides whether that user may, as it
// would for kubectl, and the dashboard's own permissions play no part. A
// page elsewhere cannot send it: it needs a JSON body and an Authorization
// header, which a browser sends to another origin only after a preflight
// the dashboard does not answer.
func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	if !s.actions {
		http.Error(w, "actions are off: start the dashboard with --allow-actions to stop and resume from the page", http.StatusForbidden)
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		http.Error(w, "Content-Type: want application/json", http.StatusUnsupportedMediaType)
		return
	}
	token := bearer(r)
	if token == "" {
		http.Error(w, "Authorization: send your own Kubernetes bearer token; the dashboard acts with your permissions, never its own",
			http.StatusUnauthorized)
		return
	}
	var a Action
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := a.Check(); err != nil {
		http.Error(w, "action: "+err.Error(), http.StatusBadRequest)
		return
	}
	cfg := rest.AnonymousClientConfig(s.cfg) // the server and its CA, none of the dashboard's credentials
	cfg.BearerToken = token
	c, err := client.New(cfg, client.Options{Scheme: s.scheme, Mapper: s.api.RESTMapper()})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var msg string
	if a.Kind == "Workload" {
		var wl *berthv1.Workload
		wl, err = stop.Workload(r.Context(), c, types.NamespacedName{Namespace: a.Namespace, Name: a.Name}, a.Verb == Resume)
		if err == nil {
			msg = stop.WorkloadDone(a.String(), a.Verb == Resume, wl.Status.Admission != nil)
		}
	} else {
		var admitted int32
		admitted, err = stop.Queue(r.Context(), c, a.Namespace, a.Name, a.StopPolicy())
		msg = stop.QueueDone(a.String(), a.StopPolicy(), admitted)
	}
	if err != nil {
		code := http.StatusBadGateway
		var st apierrors.APIStatus
		if errors.As(err, &st) && st.Status().Code != 0 {
			code = int(st.Status().Code)
		}
		http.Error(w, a.String()+": "+err.Error(), code)
		return
	}
	writeJSON(w, map[string]string{"message": msg})
}
