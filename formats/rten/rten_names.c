/* Names of RTen enum values, in schema order (schemas/rten.fbs):
 * facts of the format, used to make graph.json readable. */
#include "rten_names.h"

#include <stddef.h>

static const char *const op_names[] = {
    "Add", "ArgMin", "ArgMax", "AveragePool",
    "BatchNormalization", "Cast", "Clip", "Concat",
    "ConstantOfShape", "Conv", "ConvTranspose", "Cos",
    "CumSum", "Div", "Equal", "Erf",
    "Expand", "Flatten", "Gather", "Gemm",
    "GlobalAveragePool", "Greater", "GRU", "Identity",
    "LeakyRelu", "Less", "LessOrEqual", "Log",
    "LogSoftmax", "LSTM", "MatMul", "MaxPool",
    "Mod", "Mul", "Pad", "Pow",
    "Range", "ReduceMean", "ReduceL2", "Relu",
    "Reshape", "Resize", "Shape", "Sigmoid",
    "Sin", "Slice", "Split", "Sqrt",
    "Squeeze", "Softmax", "Sub", "Tanh",
    "Transpose", "Unsqueeze", "Where", "ReduceProd",
    "ReduceSum", "ReduceMin", "ReduceMax", "NonZero",
    "ScatterElements", "Tile", "Not", "Abs",
    "Max", "Mean", "Min", "Sum",
    "OneHot", "Round", "Floor", "Ceil",
    "Reciprocal", "TopK", "Neg", "Exp",
    "GreaterOrEqual", "Size", "Tan", "Acos",
    "Asin", "Atan", "InstanceNormalization", "HardSigmoid",
    "HardSwish", "And", "Or", "Xor",
    "Trilu", "ScatterND", "NonMaxSuppression", "Sign",
    "GatherElements", "LayerNormalization", "ReduceSumSquare", "RandomUniform",
    "Elu", "RandomUniformLike", "RandomNormal", "RandomNormalLike",
    "Softplus", "GatherND", "Gelu", "Einsum",
    "If", "DequantizeLinear", "QuantizeLinear", "DynamicQuantizeLinear",
    "MatMulInteger", "DepthToSpace", "ConvInteger", "CastLike",
    "Dropout", "EyeLike", "IsNaN", "IsInf",
    "Loop", "SequenceEmpty", "SequenceAt", "SequenceInsert",
    "ConcatFromSequence", "SplitToSequence", "SequenceLength", "SequenceConstruct",
    "SequenceErase", "GridSample", "PRelu", "STFT",
    "GlobalMaxPool", "ReduceL1", "Acosh", "Asinh",
    "Atanh", "Cosh", "Sinh", "Multinomial",
    "ReverseSequence", "DFT", "Scatter", "Upsample",
    "RotaryEmbedding", "Attention", "LpNormalization", "ReduceLogSum",
    "ReduceLogSumExp",
};

/* OperatorAttrs union members; index 0 is NONE. */
static const char *const attr_names[] = {
    "NONE",
    "ArgMaxAttrs", "AveragePoolAttrs", "BatchNormalizationAttrs",
    "CastAttrs", "ConcatAttrs", "ConstantOfShapeAttrs",
    "ConvAttrs", "ConvTransposeAttrs", "FlattenAttrs",
    "GatherAttrs", "GemmAttrs", "GRUAttrs",
    "LeakyReluAttrs", "LSTMAttrs", "MaxPoolAttrs",
    "ReduceMeanAttrs", "ReshapeAttrs", "ResizeAttrs",
    "SplitAttrs", "SoftmaxAttrs", "TransposeAttrs",
    "ModAttrs", "ScatterElementsAttrs", "OneHotAttrs",
    "TopKAttrs", "HardSigmoidAttrs", "TriluAttrs",
    "ScatterNDAttrs", "NonMaxSuppressionAttrs", "LayerNormalizationAttrs",
    "RandomUniformAttrs", "EluAttrs", "RandomUniformLikeAttrs",
    "RandomNormalAttrs", "RandomNormalLikeAttrs", "GatherNDAttrs",
    "GeluAttrs", "EinsumAttrs", "IfAttrs",
    "PadAttrs", "DequantizeLinearAttrs", "QuantizeLinearAttrs",
    "DepthToSpaceAttrs", "CastLikeAttrs", "ShapeAttrs",
    "DropoutAttrs", "EyeLikeAttrs", "IsInfAttrs",
    "LoopAttrs", "SequenceEmptyAttrs", "ConcatFromSequenceAttrs",
    "SplitToSequenceAttrs", "GridSampleAttrs", "STFTAttrs",
    "MultinomialAttrs", "ReverseSequenceAttrs", "DFTAttrs",
    "UpsampleAttrs", "RotaryEmbeddingAttrs", "AttentionAttrs",
    "CumSumAttrs", "LpNormalizationAttrs",
};

const char *mfs_rten_op_name(unsigned op)
{
    return op < sizeof op_names / sizeof op_names[0] ? op_names[op] : NULL;
}

const char *mfs_rten_attrs_name(unsigned type)
{
    return type < sizeof attr_names / sizeof attr_names[0] ? attr_names[type] : NULL;
}
