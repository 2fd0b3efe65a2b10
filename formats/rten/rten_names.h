/* Names for RTen's OperatorType and OperatorAttrs values. */
#ifndef MFS_RTEN_NAMES_H
#define MFS_RTEN_NAMES_H

/* "Conv" for the OperatorType value, NULL when unknown to this schema. */
const char *mfs_rten_op_name(unsigned op);
/* "ConvAttrs" for the OperatorAttrs union type, NULL when unknown. */
const char *mfs_rten_attrs_name(unsigned type);

/* OperatorAttrs union types that hold subgraphs. */
#define MFS_RTEN_ATTRS_IF 39
#define MFS_RTEN_ATTRS_LOOP 49

#endif
