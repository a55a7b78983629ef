/* SPDX-License-Identifier: GPL-3.0-or-later */
/* ring4.mod - reference model for tests/unit/test_ilp.c (ilp_solve_lp against glpsol --math).
 *
 * Fractional packing of directed Hamiltonian rings on DGX-1V GPUs {0,1,2,3} (nvidia-smi
 * numbering; GB/s per direction, one NVLink = 25): maximise the summed ring rate subject to the
 * capacity of every directed GPU pair, with one equality row (ring A runs at the same rate both
 * ways) and one >= row (the C rings together carry at least 5 GB/s), so that all three row types
 * of struct lp_model are exercised. test_ilp.c builds the same model through the C API.
 */
set V := 0..3;
set R := 1..6;                          /* A, A', B, B', C, C' */
param cap{u in V, v in V : u != v};     /* GB/s from u to v */
param ring{r in R, k in 0..3};          /* visiting order; the ring closes back to ring[r,0] */
/* x[r] uses arc (u,v) when v follows u in ring r */
param uses{r in R, u in V, v in V : u != v} :=
    sum{k in 0..3 : ring[r,k] = u and ring[r,(k+1) mod 4] = v} 1;
var x{R} >= 0;
maximize total: sum{r in R} x[r];
s.t. capacity{u in V, v in V : u != v}: sum{r in R} uses[r,u,v] * x[r] <= cap[u,v];
s.t. symmetric: x[1] - x[2] = 0;
s.t. cring: x[5] + x[6] >= 5;
solve;
data;
param cap :  0  1  2  3 :=
        0    .  25 25 50
        1   25  .  50 25
        2   25 50  .  50
        3   50 25 50  . ;
param ring : 0 1 2 3 :=
        1    0 1 2 3
        2    0 3 2 1
        3    0 1 3 2
        4    0 2 3 1
        5    0 2 1 3
        6    0 3 1 2 ;
end;
