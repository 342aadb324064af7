// Command netpol is the NetworkPolicy enforcer of runner's test cluster
// (test/k8s/up starts it, test/k8s/netpol-ctl stops and starts it). The
// cluster's bridge CNI enforces no NetworkPolicy; this enforces the one kind
// runner relies on: deny-all egress.
//
// A pod is cut off when at least one NetworkPolicy of its namespace selects
// it with Egress among its policyTypes, and every such policy has no egress
// rule. Then every packet FROM the pod's IPs is dropped, by rules in one
// iptables chain of its own (filter table) hooked first into INPUT (pod to
// the node's own addresses, the API server included) and FORWARD (pod to
// anywhere else, other pods too, with br_netfilter). Policies with egress
// rules are not implemented: a pod they select is left alone, and the
// enforcer logs it. Host-network pods are never touched. The rules follow
// pods and policies through informers; when a pod or its policy goes, so
// do its rules. On SIGTERM or SIGINT the chain and its hooks are removed.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	chain := flag.String("chain", "RUNNER-K8S-NETPOL", "iptables chain (filter table) that holds the drop rules")
	ready := flag.String("ready-file", "", "file written once the first sync is done")
	flag.Parse()
	log.SetFlags(log.LstdFlags | log.LUTC)

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatalf("netpol: kubeconfig %q: %v", *kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatalf("netpol: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	e := &Enforcer{Client: client, Tables: IPTables{Chain: *chain}, ReadyFile: *ready}
	err = e.Run(ctx)
	if cerr := e.Tables.Remove(); cerr != nil {
		log.Printf("netpol: removing chain %s: %v", *chain, cerr)
	}
	if err != nil {
		log.Fatalf("netpol: %v", err)
	}
	log.Printf("netpol: stopped; chain %s removed", *chain)
}

// Enforcer keeps the drop rules in step with the cluster's pods and
// policies.
type Enforcer struct {
	Client    kubernetes.Interface
	Tables    IPTables
	ReadyFile string
	// Synced, if set, is called after each successful sync with the IPs
	// then dropped.
	Synced func(ips []string)
}

// Run watches pods and policies until ctx ends.
func (e *Enforcer) Run(ctx context.Context) error {
	factory := informers.NewSharedInformerFactory(e.Client, 0)
	pods := factory.Core().V1().Pods()
	pols := factory.Networking().V1().NetworkPolicies()
	kick := make(chan struct{}, 1)
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke(kick) },
		UpdateFunc: func(any, any) { poke(kick) },
		DeleteFunc: func(any) { poke(kick) },
	}
	if _, err := pods.Informer().AddEventHandler(notify); err != nil {
		return err
	}
	if _, err := pols.Informer().AddEventHandler(notify); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), pods.Informer().HasSynced, pols.Informer().HasSynced) {
		return ctx.Err()
	}

	var applied string
	warned := map[string]bool{}
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	first := true
	for {
		podList, err := pods.Lister().List(labels.Everything())
		if err != nil {
			return err
		}
		polList, err := pols.Lister().List(labels.Everything())
		if err != nil {
			return err
		}
		ips, warnings := Blocked(polList, podList)
		for _, w := range warnings {
			if !warned[w] {
				warned[w] = true
				log.Printf("netpol: %s", w)
			}
		}
		want := strings.Join(ips, ",")
		if err := e.Tables.Apply(ips, want != applied || first); err != nil {
			log.Printf("netpol: sync: %v", err)
		} else {
			if want != applied {
				log.Printf("netpol: dropping traffic from %d pod IPs: %s", len(ips), want)
			}
			applied = want
			if first {
				first = false
				if e.ReadyFile != "" {
					if err := os.WriteFile(e.ReadyFile, []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
						return err
					}
				}
			}
			if e.Synced != nil {
				e.Synced(ips)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-kick:
		case <-tick.C:
		}
	}
}

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Blocked returns the sorted IPv4 addresses of the pods that deny-all
// egress policies cut off, and a warning for each pod left alone because a
// policy with egress rules also selects it.
func Blocked(pols []*networkingv1.NetworkPolicy, pods []*corev1.Pod) (ips []string, warnings []string) {
	type sel struct {
		selector labels.Selector
		denyAll  bool
		name     string
	}
	byNS := map[string][]sel{}
	for _, p := range pols {
		egress := slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) ||
			(len(p.Spec.PolicyTypes) == 0 && len(p.Spec.Egress) > 0)
		if !egress {
			continue
		}
		s, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("policy %s/%s: bad pod selector: %v", p.Namespace, p.Name, err))
			continue
		}
		byNS[p.Namespace] = append(byNS[p.Namespace], sel{s, len(p.Spec.Egress) == 0, p.Name})
	}
	for _, pod := range pods {
		if pod.Spec.HostNetwork || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		selected, allDeny := false, true
		var withRules []string
		for _, s := range byNS[pod.Namespace] {
			if !s.selector.Matches(labels.Set(pod.Labels)) {
				continue
			}
			selected = true
			if !s.denyAll {
				allDeny = false
				withRules = append(withRules, s.name)
			}
		}
		if !selected {
			continue
		}
		if !allDeny {
			warnings = append(warnings, fmt.Sprintf("pod %s/%s: policies with egress rules (%s) are not enforced; its egress is left open",
				pod.Namespace, pod.Name, strings.Join(withRules, ", ")))
			continue
		}
		for _, ip := range podIPs(pod) {
			if a, err := netip.ParseAddr(ip); err == nil && a.Is4() {
				ips = append(ips, a.String())
			}
		}
	}
	slices.Sort(ips)
	return slices.Compact(ips), warnings
}

func podIPs(pod *corev1.Pod) []string {
	var ips []string
	for _, ip := range pod.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	if len(ips) == 0 && pod.Status.PodIP != "" {
		ips = append(ips, pod.Status.PodIP)
	}
	return ips
}

// IPTables writes the drop rules into Chain and hooks it first into INPUT
// and FORWARD.
type IPTables struct {
	Chain string
}

var hooks = []string{"INPUT", "FORWARD"}

// Apply makes the chain hold exactly one drop rule per IP (rewriting it
// only when rewrite is set) and makes sure the hooks come first.
func (t IPTables) Apply(ips []string, rewrite bool) error {
	if rewrite {
		var b bytes.Buffer
		fmt.Fprintf(&b, "*filter\n:%s - [0:0]\n", t.Chain)
		for _, ip := range ips {
			fmt.Fprintf(&b, "-A %s -s %s/32 -m comment --comment %q -j DROP\n", t.Chain, ip, "runner test cluster: deny-all egress NetworkPolicy")
		}
		b.WriteString("COMMIT\n")
		cmd := exec.Command("iptables-restore", "-w", "--noflush")
		cmd.Stdin = &b
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("iptables-restore: %v: %s", err, bytes.TrimSpace(out))
		}
	}
	for _, h := range hooks {
		if err := t.hookFirst(h); err != nil {
			return err
		}
	}
	return nil
}

// hookFirst makes "-j Chain" the first rule of builtin chain h.
func (t IPTables) hookFirst(h string) error {
	out, err := exec.Command("iptables", "-w", "-S", h).Output()
	if err != nil {
		return fmt.Errorf("iptables -S %s: %v", h, err)
	}
	jump := fmt.Sprintf("-A %s -j %s", h, t.Chain)
	var rules []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(l, "-A ") {
			rules = append(rules, l)
		}
	}
	if len(rules) > 0 && rules[0] == jump && slices.Index(rules[1:], jump) < 0 {
		return nil
	}
	for run("iptables", "-w", "-D", h, "-j", t.Chain) == nil {
	}
	return run("iptables", "-w", "-I", h, "1", "-j", t.Chain)
}

// Remove deletes the hooks and the chain; no error when they are gone.
func (t IPTables) Remove() error {
	for _, h := range hooks {
		for run("iptables", "-w", "-D", h, "-j", t.Chain) == nil {
		}
	}
	if run("iptables", "-w", "-S", t.Chain) != nil {
		return nil
	}
	if err := run("iptables", "-w", "-F", t.Chain); err != nil {
		return err
	}
	return run("iptables", "-w", "-X", t.Chain)
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
