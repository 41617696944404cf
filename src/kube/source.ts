/** Where the API server comes from: a kubeconfig file or the in-cluster service account. */
export type KubeSource = { kind: 'kubeconfig'; path: string } | { kind: 'in-cluster' };
