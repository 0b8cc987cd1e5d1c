package optimize

import "github.com/skiplake/skiplake/log"

// markClustered sets the clusteringProvider of a bin's new files (PROTOCOL.md
// "Clustered Table": files a clustering implementation clusters carry its name, and
// only those): "liquid" for the files of a liquid clustering bin; the input's
// provider for a single-file rewrite, whose rows keep their order (and whose cube
// tags are kept too); none otherwise.
func (p *Plan) markClustered(r *binResult) {
	provider := ""
	switch {
	case r.bin.Kind == KindCluster && p.Liquid:
		provider = log.ClusteringProviderLiquid
	case r.bin.Kind == KindCompact && len(r.bin.adds) == 1:
		provider = r.bin.adds[0].ClusteringProvider
	}
	for _, a := range r.adds {
		a.ClusteringProvider = provider
	}
}
