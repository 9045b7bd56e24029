// Package detection holds torchvision's detection models as Gorgonia graphs:
// the ResNet backbones with FrozenBatchNorm2d, the feature pyramid network,
// GeneralizedRCNNTransform, the anchor generator and box coders, the
// one-stage detectors FCOS and RetinaNet and the two-stage Faster R-CNN,
// loaded from torchvision's own checkpoints (torch.save files) and giving
// torchvision's detections.
//
// Every tensor of a model lives in a Weights under its torchvision
// state_dict key ("backbone.body.layer1.0.conv1.weight",
// "head.classification_head.cls_logits.bias"): trainable parameters in
// Weights.Params, everything else (frozen layers, FrozenBatchNorm2d's
// weight, bias and statistics, BatchNorm2d's running statistics) in
// Weights.Frozen. A part's Init adds its tensors under a prefix, initialised
// as torchvision's constructor does; its Forward builds the part's nodes in
// a graph from those tensors (nn.Params.Node: no copies), so one Weights
// serves any number of graphs.
//
// The graph holds what torchvision computes with autograd on: the backbone,
// the feature pyramid and the heads. What torchvision computes on detached
// tensors runs on values between graph runs: resizing and batching the
// images, anchors, top-k selection, score thresholds, box decoding,
// clipping and batched NMS.
//
// FasterRCNN is torchvision's two-stage detector (fasterrcnn_resnet50_fpn's
// structure, or fasterrcnn_resnet50_fpn_v2's: FasterRCNNResNet50FPNV2):
// RPNHead, the RPN's proposal selection (FilterProposals),
// MultiScaleRoIAlign of the proposals, TwoMLPHead (v2: FastRCNNConvFCHead,
// whose BatchNorm2d takes in training the statistics of the sampled RoIs
// only), FastRCNNPredictor and FastRCNNPostprocessDetections. Its proposals depend on the RPN's
// outputs of the same run, so their selection, and in training the box
// head's sampling, are ops without a derivative inside the graph
// (torchvision detaches both), their results padded to fixed row counts:
// one static graph serves every batch of a shape, at every order of
// derivative, a MAML step's query proposals coming from the adapted
// parameters.
//
// Evaluate scores detections against ground truth (GroundTruth) as
// pycocotools' COCOeval does for boxes: COCO's AP, AP50, AP75, APs/m/l and
// AR numbers, with its precision and recall arrays (COCOEval, COCOParams).
//
// For training, RetinaNet.Loss, FCOS.Loss and FasterRCNN.Loss add
// torchvision's losses to a graph of the model in training mode; the ground truth (Targets, padded
// into a TargetBatch by PadTargets) is matched to the anchors on values
// (Matcher and the models' own rules) by LossInputs.Set, which feeds the
// result to the graph's input nodes, so one graph serves every batch of
// its image size and the losses are differentiable to every order.
// Trainer runs torchvision's training recipe on them (NewTrainer,
// DefaultTrainerOpts): each Step runs the graph of the batch's shape
// (losses and gradients) and updates the weights with SGD, momentum and
// weight decay, under a linear warm-up and a multi-step decay.
//
// For meta-learning, LossAt builds those losses at parameter nodes other
// than the weights' own (adapted ones, computed in the graph), and
// NewMAMLTask puts package meta's MAML on a detector (Trainable): inner
// SGD steps on a support batch, the query batch's loss at the adapted
// parameters and its meta-gradient, second order through the inner
// gradient or first order (MAMLTask).
package detection
