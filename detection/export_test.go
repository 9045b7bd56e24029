package detection

import "gorgonia.org/tensor"

// FasterRCNNProposals gives the external tests the RPN's proposals of a
// Forward on images (each image's, in the batch's pixels).
func FasterRCNNProposals(f *FasterRCNN, images []*tensor.Dense) ([]Proposals, error) {
	_, raw, err := f.rawOutputs(images)
	if err != nil {
		return nil, err
	}
	return raw.proposals, nil
}
