// Cheat for lab 05: instead of writing the kernel, the file includes the reference solution's
// source, which the workbook's own tree holds (solutions/), through the include path the labs are
// compiled with. Compiled, it would be the solution itself. The build refuses it: the file reads a
// file of the workbook outside the tree being graded and common/ (grading/buildtools/student_symbols.py).
// expect-build-error: includes solutions/05_tiled_matmul/matmul.cu
#include "solutions/05_tiled_matmul/matmul.cu"
