// --mode=harddisk: the example HardDisk operator (examples/harddisk-operator,
// src/reconciler.ts) written the way a kubebuilder project writes it, for
// `pnpm bench:memory`'s HardDisk phase. It reconciles crd-demo.io/v1
// HardDisks as the example does:
//
//   - For HardDisk with GenerationChangedPredicate, Owns ConfigMap;
//   - the finalizer crd-demo.io/release-disk, added by an optimistic-lock
//     merge patch; on deletion the owned ConfigMap is deleted, an event
//     Released recorded and the finalizer removed;
//   - an invalid spec (size not a quantity, unknown storage class): status
//     phase Invalid, Ready False/InvalidSpec, a Warning event;
//   - otherwise the ConfigMap <name>-disk (label crd-demo.io/disk, data
//     size / storageClass / medium / iops, controller reference) created or
//     updated with an event Provisioned or Resized, then status phase Bound,
//     configMapName, observedGeneration and the Ready condition, patched
//     only when something changed;
//   - events through events.k8s.io/v1 (mgr.GetEventRecorder), as kubeloop's
//     recorder writes them; managedFields stripped from the cache; JSON logs
//     (zap, as kubebuilder scaffolds), one line per ConfigMap written;
//     metrics and health probes served on loopback; client-side rate limit
//     off (controller-runtime's default since v0.21, as kubeloop's).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	goruntime "runtime"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	crscheme "sigs.k8s.io/controller-runtime/pkg/scheme"
)

// --- the kind, as controller-gen would generate it ---------------------------------

var groupVersion = schema.GroupVersion{Group: "crd-demo.io", Version: "v1"}

type HardDiskSpec struct {
	Size         string `json:"size"`
	StorageClass string `json:"storageClass,omitempty"`
}

type HardDiskStatus struct {
	Phase              string             `json:"phase,omitempty"`
	ConfigMapName      string             `json:"configMapName,omitempty"`
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

type HardDisk struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              HardDiskSpec   `json:"spec,omitempty"`
	Status            HardDiskStatus `json:"status,omitempty"`
}

type HardDiskList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HardDisk `json:"items"`
}

func (in *HardDisk) DeepCopyInto(out *HardDisk) {
	*out = *in
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if in.Status.Conditions != nil {
		out.Status.Conditions = make([]metav1.Condition, len(in.Status.Conditions))
		for i := range in.Status.Conditions {
			in.Status.Conditions[i].DeepCopyInto(&out.Status.Conditions[i])
		}
	}
}

func (in *HardDisk) DeepCopy() *HardDisk {
	out := new(HardDisk)
	in.DeepCopyInto(out)
	return out
}

func (in *HardDisk) DeepCopyObject() runtime.Object { return in.DeepCopy() }

func (in *HardDiskList) DeepCopyObject() runtime.Object {
	out := &HardDiskList{TypeMeta: in.TypeMeta}
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	if in.Items != nil {
		out.Items = make([]HardDisk, len(in.Items))
		for i := range in.Items {
			in.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

// --- the reconciler ------------------------------------------------------------------

const finalizer = "crd-demo.io/release-disk"

// The example's QUANTITY (src/webhooks.ts) and StorageClassCatalog (src/storage-classes.ts).
var quantity = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$`)
var storageClasses = map[string]struct{ medium, iops string }{
	"standard": {"hdd", "500"},
	"fast":     {"ssd", "16000"},
}

type hardDiskReconciler struct {
	client.Client
	scheme   *runtime.Scheme
	recorder events.EventRecorder
}

func (r *hardDiskReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var disk HardDisk
	if err := r.Get(ctx, req.NamespacedName, &disk); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err) // deleted, and the finalizer already ran
	}
	configMapName := req.Name + "-disk"

	if !disk.DeletionTimestamp.IsZero() {
		if controllerutil.ContainsFinalizer(&disk, finalizer) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: configMapName}}
			if err := r.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
				return ctrl.Result{}, err
			}
			r.recorder.Eventf(&disk, nil, corev1.EventTypeNormal, "Released", "Finalize", "released ConfigMap %s", configMapName)
			log.Info("disk released", "configMap", configMapName)
			before := disk.DeepCopy()
			controllerutil.RemoveFinalizer(&disk, finalizer)
			if err := r.Patch(ctx, &disk, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
				return ctrl.Result{}, client.IgnoreNotFound(err)
			}
		}
		return ctrl.Result{}, nil
	}
	if !controllerutil.ContainsFinalizer(&disk, finalizer) {
		before := disk.DeepCopy()
		controllerutil.AddFinalizer(&disk, finalizer)
		if err := r.Patch(ctx, &disk, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}

	size := disk.Spec.Size
	storageClass := disk.Spec.StorageClass
	if storageClass == "" {
		storageClass = "standard"
	}
	described, known := storageClasses[storageClass]
	if !quantity.MatchString(size) || !known {
		message := fmt.Sprintf("unknown storage class %s", storageClass)
		if !quantity.MatchString(size) {
			message = fmt.Sprintf("spec.size %q is not a quantity", size)
		}
		if err := r.updateStatus(ctx, &disk, "Invalid", "", metav1.ConditionFalse, "InvalidSpec", message); err != nil {
			return ctrl.Result{}, err
		}
		r.recorder.Eventf(&disk, nil, corev1.EventTypeWarning, "InvalidSpec", "Reconcile", message)
		return ctrl.Result{}, nil // nothing to retry until the spec changes
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: configMapName}}
	op, err := controllerutil.CreateOrUpdate(ctx, r.Client, cm, func() error {
		if cm.Labels == nil {
			cm.Labels = map[string]string{}
		}
		cm.Labels["crd-demo.io/disk"] = req.Name
		cm.Data = map[string]string{"size": size, "storageClass": storageClass, "medium": described.medium, "iops": described.iops}
		return controllerutil.SetControllerReference(&disk, cm, r.scheme)
	})
	if err != nil {
		return ctrl.Result{}, err
	}
	if op != controllerutil.OperationResultNone {
		reason := "Resized"
		if op == controllerutil.OperationResultCreated {
			reason = "Provisioned"
		}
		r.recorder.Eventf(&disk, nil, corev1.EventTypeNormal, reason, "Reconcile", "ConfigMap %s %s", configMapName, op)
		log.Info("disk ConfigMap synced", "configMap", configMapName, "op", op)
	}
	return ctrl.Result{}, r.updateStatus(ctx, &disk, "Bound", configMapName, metav1.ConditionTrue, "Provisioned", fmt.Sprintf("ConfigMap %s describes %s %s", configMapName, size, storageClass))
}

// updateStatus patches status (a merge patch of what changed) only when something changed.
func (r *hardDiskReconciler) updateStatus(ctx context.Context, disk *HardDisk, phase, configMapName string, ready metav1.ConditionStatus, reason, message string) error {
	before := disk.DeepCopy()
	status := &disk.Status
	changed := status.Phase != phase || (configMapName != "" && status.ConfigMapName != configMapName) || status.ObservedGeneration != disk.Generation
	status.Phase = phase
	if configMapName != "" {
		status.ConfigMapName = configMapName
	}
	status.ObservedGeneration = disk.Generation
	changed = meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: "Ready", Status: ready, Reason: reason, Message: message, ObservedGeneration: disk.Generation}) || changed
	if !changed {
		return nil // a steady-state reconcile makes no request
	}
	return r.Status().Patch(ctx, disk, client.MergeFrom(before))
}

// reportMemory prints {"memory":{"heapUsed","heapTotal"}} on each SIGUSR2: the Go heap's
// allocated bytes and the heap memory it holds from the OS (HeapSys - HeapReleased), the
// counterparts of V8's used and committed heap that bench/memory.ts reads from node.
func reportMemory() {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGUSR2)
	go func() {
		for range signals {
			var m goruntime.MemStats
			goruntime.ReadMemStats(&m)
			say(map[string]any{"memory": map[string]uint64{"heapUsed": m.HeapAlloc, "heapTotal": m.HeapSys - m.HeapReleased}})
		}
	}()
}

// runHardDisks runs the HardDisk operator until a signal; it prints {"synced":ms} once the
// HardDisk and ConfigMap informers have synced, and its heap on SIGUSR2.
func runHardDisks(cfg *rest.Config, metricsAddr string) error {
	ctrl.SetLogger(zap.New(zap.UseDevMode(false)))
	reportMemory()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := (&crscheme.Builder{GroupVersion: groupVersion}).Register(&HardDisk{}, &HardDiskList{}).AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: "127.0.0.1:0",
		Cache:                  cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
	})
	if err != nil {
		return err
	}
	reconciler := &hardDiskReconciler{Client: mgr.GetClient(), scheme: scheme, recorder: mgr.GetEventRecorder("harddisk-controller")}
	err = ctrl.NewControllerManagedBy(mgr).Named("harddisk").
		For(&HardDisk{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&corev1.ConfigMap{}).
		Complete(reconciler)
	if err != nil {
		return err
	}
	started := time.Now()
	err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		for _, obj := range []client.Object{&HardDisk{}, &corev1.ConfigMap{}} {
			if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
				return err
			}
		}
		say(map[string]any{"synced": time.Since(started).Milliseconds()})
		<-ctx.Done()
		return nil
	}))
	if err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
