// Package deploy holds no code. Its tests check the Kubernetes manifests
// under deploy/kubernetes without a cluster or a network: every document
// decodes strictly into its Kubernetes API type, every kustomization lists
// the files of its directory, and every QO_* variable the manifests set is
// one the qo command reads. The Kubernetes modules they use are linked into
// the tests only, never into the qo binary.
package deploy
