// Package meta builds meta-learning graphs on Gorgonia: MAML (Finn et
// al., 2017, "Model-Agnostic Meta-Learning for Fast Adaptation of Deep
// Networks"), second order through the inner gradient or first order,
// for any model whose loss can be built at given parameter nodes.
//
// MAML adds to a graph the inner SGD steps on a support loss, the query
// loss at the adapted parameters and its gradient w.r.t. the initial
// parameters (MAMLGraph); LossAt is how a model is handed to it, a
// function building the model's scalar loss at parameter nodes other
// than its own. The derivatives are package ad's (ad.Grad), which
// differentiates a gradient again, so the second-order meta-gradient is
// ad.Grad of a graph that holds ad.Grad: torch's
// torch.autograd.grad(..., create_graph=True) followed by a backward.
//
// meta imports of this module only ad: models (package detection,
// examples) use it, not the other way round.
package meta
