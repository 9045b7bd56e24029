package detection

import (
	"fmt"

	"github.com/gops-dev/gops/meta"
	"gorgonia.org/gorgonia"
)

// MAMLTask is the graph of one MAML task on a detector (meta.MAML on its
// total training loss): the inner SGD steps on a support batch, the loss
// on a query batch at the adapted parameters and its meta-gradient
// w.r.t. every trainable parameter. Set the ground truth (SetTargets) and
// the images (gorgonia.Let on the support and query input nodes) before
// each run of the graph's machine; one graph serves every task of its
// image size and padded ground-truth maximum.
type MAMLTask struct {
	// Names are the trainable parameters' keys (Weights().Params.Names()),
	// the order of Theta and of Step's per-parameter nodes.
	Names []string
	// Theta are the parameters' own nodes in the graph (Params.Nodes):
	// the values a meta-training step updates.
	Theta gorgonia.Nodes
	// Step are meta.MAML's nodes: Step.QueryLoss is the total loss of the
	// query batch at the adapted parameters, Step.MetaGrads its
	// meta-gradients (Names' order), Step.SupportLosses the support
	// batch's total loss at each inner step.
	Step *meta.MAMLGraph
	// Support are the LossInputs of the support loss of each inner step,
	// Query those of the query loss.
	Support []*LossInputs
	Query   *LossInputs
}

// NewMAMLTask builds a MAML task on m in support's graph: support and
// query are the transformed batches [B, 3, H, W] (as Loss's x; input
// nodes whose images are set before each run), opts meta.MAML's (inner
// step size, steps, first order). The inner steps and the meta-gradient
// run over every trainable parameter (Weights().Params). As torch's
//
//	params = {k: p for k, p in model.named_parameters() if p.requires_grad}
//	g = torch.autograd.grad(sum(model(support, targets_s).values()),
//	                        params.values(), create_graph=True)
//	adapted = {k: p - alpha * gi for (k, p), gi in zip(params.items(), g)}
//	loss = sum(functional_call(model, adapted, (query, targets_q)).values())
//	meta_grads = torch.autograd.grad(loss, params.values())
//
// on torchvision's model in train mode (torch 1.13:
// torch.nn.utils.stateless.functional_call).
//
// Errors: m nil; support or query nil or in different graphs; as
// meta.MAML's and the models' Loss's.
func NewMAMLTask(m Trainable, support, query *gorgonia.Node, opts meta.MAMLOpts) (*MAMLTask, error) {
	if m == nil || m.Weights() == nil || m.Weights().Params == nil {
		return nil, fmt.Errorf("detection: NewMAMLTask: the model is nil or not made by its constructor")
	}
	if support == nil || query == nil || support.Graph() != query.Graph() {
		return nil, fmt.Errorf("detection: NewMAMLTask: the support and query batches must be nodes of one graph")
	}
	params := m.Weights().Params
	theta, err := params.Nodes(support.Graph())
	if err != nil {
		return nil, fmt.Errorf("detection: NewMAMLTask: %w", err)
	}
	t := &MAMLTask{Names: params.Names(), Theta: theta}
	lossAt := func(x *gorgonia.Node, inputs func(*LossInputs)) meta.LossAt {
		return func(at gorgonia.Nodes) (*gorgonia.Node, error) {
			byName := make(map[string]*gorgonia.Node, len(at))
			for i, n := range at {
				byName[t.Names[i]] = n
			}
			in, losses, err := m.LossAt(x, byName)
			if err != nil {
				return nil, err
			}
			inputs(in)
			return losses.Total, nil
		}
	}
	t.Step, err = meta.MAML(theta,
		lossAt(support, func(in *LossInputs) { t.Support = append(t.Support, in) }),
		lossAt(query, func(in *LossInputs) { t.Query = in }), opts)
	if err != nil {
		return nil, fmt.Errorf("detection: NewMAMLTask: %w", err)
	}
	return t, nil
}

// SetTargets sets the ground truth of the support batch (every inner
// step's) and of the query batch, for the next run of the graph.
//
// Errors: as LossInputs.Set's, naming the batch.
func (t *MAMLTask) SetTargets(support, query TargetBatch) error {
	if t == nil || t.Query == nil {
		return fmt.Errorf("detection: MAMLTask.SetTargets: the task is nil or not made by NewMAMLTask")
	}
	for _, in := range t.Support {
		if err := in.Set(support); err != nil {
			return fmt.Errorf("detection: MAMLTask.SetTargets: support: %w", err)
		}
	}
	if err := t.Query.Set(query); err != nil {
		return fmt.Errorf("detection: MAMLTask.SetTargets: query: %w", err)
	}
	return nil
}

// SetImageSizes gives a Faster R-CNN task the images' sizes in the
// support and query batches (ImageList.ImageSizes), to which the
// proposals are clipped; until then they are the padded batches' sizes.
// A no-op for FCOS and RetinaNet.
//
// Errors: as LossInputs.SetImageSizes', naming the batch.
func (t *MAMLTask) SetImageSizes(support, query [][2]int) error {
	if t == nil || t.Query == nil {
		return fmt.Errorf("detection: MAMLTask.SetImageSizes: the task is nil or not made by NewMAMLTask")
	}
	for _, in := range t.Support {
		if err := in.SetImageSizes(support); err != nil {
			return fmt.Errorf("detection: MAMLTask.SetImageSizes: support: %w", err)
		}
	}
	if err := t.Query.SetImageSizes(query); err != nil {
		return fmt.Errorf("detection: MAMLTask.SetImageSizes: query: %w", err)
	}
	return nil
}
