package kubernetes

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Permission is one verb on one resource that the backend uses, and
// whether the cluster allows it to runner's account in the namespace.
type Permission struct {
	Verb, Group, Resource, Subresource string
	Allowed                            bool
	Reason                             string
}

// Needed lists every verb the backend uses, and nothing else: the Role a
// cluster grants runner (see the README) holds exactly these.
// RuntimeClasses are cluster-scoped: their list needs a ClusterRole.
var Needed = []Permission{
	{Verb: "create", Resource: "pods"},
	{Verb: "get", Resource: "pods"},
	{Verb: "list", Resource: "pods"},
	{Verb: "delete", Resource: "pods"},
	{Verb: "create", Resource: "pods", Subresource: "exec"},
	{Verb: "create", Group: "networking.k8s.io", Resource: "networkpolicies"},
	{Verb: "list", Group: "networking.k8s.io", Resource: "networkpolicies"},
	{Verb: "delete", Group: "networking.k8s.io", Resource: "networkpolicies"},
	{Verb: "list", Group: "node.k8s.io", Resource: "runtimeclasses"},
}

// Permissions asks the API server, with one SelfSubjectAccessReview per
// entry of Needed, what runner's account may do in the namespace.
func (b *Backend) Permissions(ctx context.Context) ([]Permission, error) {
	out := make([]Permission, 0, len(Needed))
	for _, p := range Needed {
		ns := b.namespace
		if p.Resource == "runtimeclasses" {
			ns = ""
		}
		r, err := b.cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, b.explain(fmt.Sprintf("review permission %s %s", p.Verb, p.Resource), "selfsubjectaccessreviews", err)
		}
		p.Allowed, p.Reason = r.Status.Allowed, r.Status.Reason
		out = append(out, p)
	}
	return out, nil
}
