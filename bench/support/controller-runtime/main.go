// controller-runtime's side of `pnpm bench:memory`. --mode=configmaps (the
// default): a manager with one controller that owns ConfigMaps (so its cache holds every ConfigMap of the
// cluster, as the example's and the scaffold's do), managedFields stripped
// as kubeloop's cache strips them, client-go's defaults otherwise (WatchList
// on). --mode=harddisk: the example HardDisk operator written with
// controller-runtime (harddisk.go). Built and run by bench/memory.ts when Go
// is on PATH.
//
//	go run . --kubeconfig PATH [--mode=configmaps|harddisk] [--metrics-bind-address=127.0.0.1:PORT]
//
// Prints one JSON line once its cache has synced ({"synced":...}) and one
// when its reflector lists or streams ConfigMaps again ({"relisted":...}),
// seen at its own transport: a second initial list or WatchList request.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func say(line map[string]any) {
	b, _ := json.Marshal(line)
	os.Stdout.Write(append(b, '\n'))
}

// initialSyncs counts the requests that (re)build the ConfigMap store: a LIST, or a watch with sendInitialEvents.
type initialSyncs struct {
	next  http.RoundTripper
	count atomic.Int64
}

func (t *initialSyncs) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/configmaps") && (q.Get("watch") != "true" || q.Get("sendInitialEvents") == "true") {
		if t.count.Add(1) > 1 {
			say(map[string]any{"relisted": t.count.Load() - 1})
		}
	}
	return t.next.RoundTrip(req)
}

func main() {
	mode := flag.String("mode", "configmaps", "configmaps: one controller owning ConfigMaps; harddisk: the example HardDisk operator")
	metricsAddr := flag.String("metrics-bind-address", "127.0.0.1:0", "harddisk mode: where /metrics is served (bench:churn reads workqueue_depth there)")
	flag.Parse() // --kubeconfig is controller-runtime's own flag
	cfg := ctrl.GetConfigOrDie()
	switch *mode {
	case "configmaps":
	case "harddisk":
		if err := runHardDisks(cfg, *metricsAddr); err != nil {
			panic(err)
		}
		return
	default:
		fmt.Fprintf(os.Stderr, "--mode must be configmaps or harddisk, not %q\n", *mode)
		os.Exit(2)
	}
	cfg.QPS, cfg.Burst = 50, 100
	counter := &initialSyncs{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter }
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
	})
	if err != nil {
		panic(err)
	}
	err = ctrl.NewControllerManagedBy(mgr).Named("configmaps").For(&corev1.ConfigMap{}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			var cm corev1.ConfigMap
			return reconcile.Result{}, mgr.GetClient().Get(ctx, req.NamespacedName, &cm)
		}))
	if err != nil {
		panic(err)
	}
	ctx := ctrl.SetupSignalHandler()
	started := time.Now()
	// Runnables start once the cache runs; GetInformer blocks until the ConfigMap informer has synced.
	err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if _, err := mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{}); err != nil {
			return err
		}
		say(map[string]any{"synced": time.Since(started).Milliseconds()})
		<-ctx.Done()
		return nil
	}))
	if err != nil {
		panic(err)
	}
	if err := mgr.Start(ctx); err != nil {
		panic(err)
	}
}
