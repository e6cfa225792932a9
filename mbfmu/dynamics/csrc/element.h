/*
 * Plug-in elements: a force element that the engine core does not know,
 * written once in C against this interface and registered by the plant that
 * uses it (MultibodyPlant.register_elements). The native FMU's model_data.c
 * holds the registry MBN_DATA.elements, which its runtime iterates; the
 * Python plant compiles the same C file and hands its class to the kernels
 * (binding.c's element_adapt, element_rhs, element_outputs; the exact
 * tangents through tangent_binding.c). An element's C uses its arguments
 * and the C math library only.
 *
 * An element acts on one point rB (body frame, m) of one body. From the
 * point's world position x (m) and velocity V (m/s), the time t (s) and its
 * own continuous states s (nstate, units the class's) it gives the world
 * force F (N) on that point and the rates sdot of its states (units of s per
 * second), its outputs (sensors of kind MBN_SENS_ELEMENT), and the tangents
 * of all of them along (dx, dV, ds) for the exact directional derivatives
 * (dirder.c). Its parameters sit in the plant's numeric description d, so
 * that a parameter of the plant they are computed from moves them (tape.h).
 * The runtime turns F into the body's spatial force (fext) of the rigid
 * right-hand side; the states of all elements follow the plant's [q; v] in
 * the state vector, element after element in registry order, and are
 * integrated with them (Co-Simulation) or are continuous states (Model
 * Exchange).
 *
 * An element may also carry discrete states z (ndisc), changed only at the
 * instants k T (k = 1, 2, ...; absolute time) of its sampling grid of spacing
 * T = period(par) (s), where sample(par, t, s, z) updates them from its
 * continuous states: the states of all elements' discrete states follow all
 * their continuous ones, element after element. Co-Simulation and the Python
 * plant integrate up to each instant and sample there (mbn_element_advance),
 * Model Exchange has a time event there (model_exchange.c); their rates are
 * zero and they are neither knowns nor unknowns of the directional
 * derivatives (zero columns). force, the rates and the outputs do not read
 * them (the plant's outputs may, sensors.h's state value).
 *
 * An element may also be the plant's moving frame (a frame element: the
 * block "frame elements" below): the crash occupant plant's sled frame
 * (models/sled_frame.c) is one, and its HIC recorder (models/hic_recorder.c)
 * reads the specific force in that frame.
 *
 * An element may act on joint coordinates instead of (or besides) its point:
 * joint rows, generalized forces on the velocity coordinates iv it is
 * registered with, from the coordinates q[iq] and velocities v[iv], its states
 * and its discrete states (which joint rows, unlike force, may read), with
 * their tangent (dirder.c adds it to the generalized forces' tangent). It may
 * have state events: indicators whose crossing from negative to zero changes
 * its discrete states (on_event), located by bisection in Co-Simulation and
 * the Python plant (mbn_element_advance splits the interval there), state
 * events of Model Exchange (model_exchange.c). And an elastic energy, which
 * the plant's potential-energy output with index 1 counts. The satellite
 * plant's hinge latches (models/hinge_latch.c, one element per hinge) use all
 * three, as does the test-only one-sided stop (tests/native/elements/joint_stop.c).
 */
#ifndef MBFMU_ELEMENT_H
#define MBFMU_ELEMENT_H

#include <stddef.h>

#include "adaptive.h"
#include "mb.h"
#include "sensors.h"

/* most states one element may carry (mbn_new refuses more) */
#define MBN_ELEMENT_MAX_STATES 16
/* most discrete states one element may carry */
#define MBN_ELEMENT_MAX_DISCRETE 256
/* the output sensor kind of an element's outputs (sensors.h's mb_sensor:
 * index = the element's registry position, axis = which of its outputs) */
#define MBN_SENS_ELEMENT 64

typedef struct {
    const char *name; /* for messages */
    int npar;         /* its parameters after the point (element.c's table) */
    int nstate;       /* its continuous states (0: none; s and sdot are then not read / written) */
    /* its point force F and its states' rates sdot, and their tangent: both or neither (NULL:
     * no point force, such as a recorder, a frame or joint rows only; the rates are then
     * accel_rate's alone, or zero) */
    void (*force)(const double *par, double t, const double *x, const double *V, const double *s, double *F,
                  double *sdot);
    void (*tangent)(const double *par, double t, const double *x, const double *V, const double *s, const double *dx,
                    const double *dV, const double *ds, double *dF, double *dsdot);
    /* its outputs (sensors of the plant, kind MBN_SENS_ELEMENT; 0: none, output and
     * output_tangent may then be NULL): y[k] (units the class's) at (t, x, V, s), and
     * its tangent dy along (dx, dV, ds) */
    int nout;
    double (*output)(const double *par, double t, const double *x, const double *V, const double *s, int k);
    double (*output_tangent)(const double *par, double t, const double *x, const double *V, const double *s, int k,
                             const double *dx, const double *dV, const double *ds);
    /* optional (NULL: none): rates that read the point's specific force A (world, m/s^2: its
     * acceleration minus gravity, what an accelerometer there reads) at the solved dv/dt,
     * added to force's sdot; and their tangent along (dx, dV, dA, ds), added to dsdot */
    void (*accel_rate)(const double *par, double t, const double *x, const double *V, const double *A,
                       const double *s, double *sdot);
    void (*accel_rate_tangent)(const double *par, double t, const double *x, const double *V, const double *A,
                               const double *s, const double *dx, const double *dV, const double *dA,
                               const double *ds, double *dsdot);
    /* optional discrete states (0: none; period and sample may then be NULL): the grid
     * spacing T (s, > 0 and finite) from the parameters, and the update of z (ndisc) in
     * place at a grid instant t (s) from the element's continuous states s. An element
     * with events (nevent > 0, below) may have discrete states and no grid (period and
     * sample NULL): its z then change at its events only (on_event). */
    int ndisc;
    double (*period)(const double *par);
    void (*sample)(const double *par, double t, const double *s, double *z);
    /* ---- joint rows, state events and energy (the hinge latches' needs) ----
     * optional joint rows (njoint 0: none; the functions may then be NULL): generalized
     * forces tauj (njoint; N m on a revolute, N on a prismatic coordinate) on the
     * registered velocity coordinates iv from the registered configuration coordinates
     * qj = q[iq] (rad or m) and velocities vj = v[iv] (rad/s or m/s), the element's
     * continuous states s and its discrete states z (read only: constant in the tangent),
     * added to the commanded tau; and their tangent dtauj along (dqj, dvj, ds). An
     * element with joint rows may have no point force (force and tangent NULL, as any element). */
    int njoint;
    void (*joint_force)(const double *par, double t, const double *qj, const double *vj, const double *s,
                        const double *z, double *tauj);
    void (*joint_tangent)(const double *par, double t, const double *qj, const double *vj, const double *s,
                          const double *z, const double *dqj, const double *dvj, const double *ds,
                          double *dtauj);
    /* optional state events (nevent 0: none; event and on_event may then be NULL): the
     * indicators g (nevent, units the class's: 1e-13 of them locates an event) at (t, qj,
     * vj, s, z). An indicator armed (g < 0) at the start of an interval that reaches g >= 0
     * at its end is an event: Co-Simulation and the Python plant split the interval at the
     * first such instant (bisection to g < 1e-13 or 2^-60 of the interval, each part
     * integrated anew from its start), where on_event updates z in place (every element
     * with events is called; each decides from its own g); Model Exchange reports g as
     * event indicators and calls on_event at their events. A disarmed indicator (an event
     * that has happened for good) should read a positive constant. */
    int nevent;
    void (*event)(const double *par, double t, const double *qj, const double *vj, const double *s,
                  const double *z, double *g);
    void (*on_event)(const double *par, double t, const double *qj, const double *vj, const double *s, double *z);
    /* optional (NULL: none): the elastic energy (J) the element stores at (qj, vj, s, z),
     * added to the plant's potential-energy sensor (sensors.h's MB_SENS_POTENTIAL with
     * index 1), and its tangent (J) along (dqj, dvj, ds); both or neither */
    double (*energy)(const double *par, const double *qj, const double *vj, const double *s, const double *z);
    double (*energy_tangent)(const double *par, const double *qj, const double *vj, const double *s,
                             const double *z, const double *dqj, const double *dvj, const double *ds);
    /* ---- frame elements (the block "frame elements" below; NULL: not a frame) ---- */
    void (*frame_accel)(const double *par, double t, const double *u, int nu, double *a);
    void (*frame_accel_tangent)(const double *par, double t, const double *u, int nu, const double *du,
                                double *da);
    double (*frame_next_kink)(const double *par, double t);
} mbn_element_class;

/* most joint rows and event indicators of one element (mbn_new refuses more) */
#define MBN_ELEMENT_MAX_JOINTS 16
#define MBN_ELEMENT_MAX_EVENTS 16

/* one registered element: its class, body, the offset o_par in the plant's
 * numeric description d of its parameters [rB (3); npar] (the tape moves
 * them with the plant's parameters, tape.h), npar and nstate as registered
 * (mbn_new refuses a registry that does not match its classes), the offset
 * os of its states in the elements' block (after [q; v]) and their start
 * values s0 (nstate). par is NULL in the registry; the instance's copy
 * (mbn_instance.el) points it at its current d. ndisc, oz and z0: its
 * discrete states, their offset in the elements' block (after all
 * continuous states) and start values. */
typedef struct {
    const mbn_element_class *cls;
    int body;
    int o_par;
    int npar;
    int nstate, os;
    const double *s0;
    const double *par;
    int ndisc, oz;
    const double *z0;
    /* ---- joint rows (the class's njoint of each, 0-based; NULL without) ---- */
    const int *iq, *iv;
} mbn_element;

/* add the accel_rate of the elements that have one to sdot (their states'
 * rates, the elements' block) at (q, v) and the solved vdot, time t; runs
 * mb_rnea (ws->tau is its scratch). Returns 1 if any element has one. */
int mbn_elements_accel_rates(const mb_model *m, mb_data *ws, int nel, const mbn_element *el, double t,
                             const double *q, const double *v, const double *vdot, const double *s, double *sdot);

/* 1 if cls has its force and tangent, its outputs' functions when nout > 0,
 * accel_rate and accel_rate_tangent both or neither, and period and sample
 * when ndisc > 0 */
int mbn_element_class_complete(const mbn_element_class *cls);

/* the elements' states in all (the block after [q; v]) */
int mbn_elements_nstate(int nel, const mbn_element *el);

/* the world position x (m) and velocity V (m/s) of the element's point
 * after mb_kinematics */
void mbn_element_point(const mb_model *m, mb_data *ws, const mbn_element *el, double *x, double *V);

/* fext (nb, 6; body frame, zeroed first) = the elements' forces at state
 * (q, v, s) and time t, s the elements' states block; their rates into sdot
 * (same layout) unless NULL; runs mb_kinematics(q, v) */
void mbn_elements_fext(const mb_model *m, mb_data *ws, int nel, const mbn_element *el, double t, const double *q,
                       const double *v, const double *s, double *fext, double *sdot);

/* the rigid velocity-variable mb_ode of m with the elements' forces added to
 * the fext it is given and their states after v: y = [v; s] (ny = nv +
 * mbn_elements_nstate); ctx holds what f reads (mbn_element_ode_init) */
typedef struct {
    mb_ode inner;
    const mb_model *m;
    mb_data *ws;
    int nel;
    const mbn_element *el;
    double t0, t_stage; /* the interval's start (s), the stage's time from it (mb_adapt_advance) */
    double *fext;       /* (nb, 6) scratch */
    const double *u;    /* the plant's inputs (nu) a frame element reads (mbn_element_ode_inputs) */
    int nu;
    /* ---- joint rows and events ----
     * blk: the elements' block (after [q; v]: continuous, then discrete states) the joint
     * rows read z from; NULL: the y that f is given holds it after v (a direct call of f
     * with the whole state; mbn_element_advance points it at its y, whose stages hold [v; s] only) */
    const double *blk;
} mbn_element_ode;
void mbn_element_ode_init(mbn_element_ode *e, const mb_model *m, mb_data *ws, int nel, const mbn_element *el,
                          double t0, double *fext, mb_ode *ode);

/* the plant's inputs u (nu) that a frame element reads at each evaluation of
 * the ode (none until set: u NULL, nu 0) */
void mbn_element_ode_inputs(mbn_element_ode *e, const double *u, int nu);

/* ---- joint rows, events and energy ---- */
/* 1 if any element has joint rows (njoint > 0) */
int mbn_elements_have_joints(int nel, const mbn_element *el);
/* The functions below read each element's continuous states at sblk + os and its discrete
 * ones at zblk + oz (both usually the elements' block, the state after [q; v]). */
/* tau (nv) += the elements' joint rows at (q, v) and time t (s) */
void mbn_elements_joint_forces(int nel, const mbn_element *el, double t, const double *q, const double *v,
                               const double *sblk, const double *zblk, double *tau);
/* dtau (nv) += their tangent along (dq, dv, dsblk) (dq a seed of q in the coordinates q has) */
void mbn_elements_joint_tangents(int nel, const mbn_element *el, double t, const double *q, const double *v,
                                 const double *sblk, const double *zblk, const double *dq, const double *dv,
                                 const double *dsblk, double *dtau);
/* the elements' event indicators in all */
int mbn_elements_nevent(int nel, const mbn_element *el);
/* g (mbn_elements_nevent) = their indicators at (t, q, v), element after element */
void mbn_elements_events(int nel, const mbn_element *el, double t, const double *q, const double *v,
                         const double *sblk, const double *zblk, double *g);
/* every element with events updates its discrete states (in blk, the elements' block) at (t, q, v) */
void mbn_elements_on_event(int nel, const mbn_element *el, double t, const double *q, const double *v, double *blk);
/* the elastic energy (J) of the elements that have one at (q, v), and its tangent along (dq, dv, dsblk) */
double mbn_elements_energy(int nel, const mbn_element *el, const double *q, const double *v, const double *sblk,
                           const double *zblk);
double mbn_elements_energy_tangent(int nel, const mbn_element *el, const double *q, const double *v,
                                   const double *sblk, const double *zblk, const double *dq, const double *dv,
                                   const double *dsblk);

/* the elements' discrete states in all (the block after their continuous ones) */
int mbn_elements_ndisc(int nel, const mbn_element *el);

/* the first instant after t (s) of the elements' sampling grids (t itself
 * counts as passed within 1e-6 of a spacing); INFINITY without discrete
 * states, NAN when a period is not positive and finite */
double mbn_elements_next_instant(int nel, const mbn_element *el, double t);

/* at time t (s): the elements whose grid has an instant there (within 1e-9 of
 * their spacing) sample their discrete states at that instant; blk is the
 * elements' block (the state after [q; v]). done (nel, or NULL): each
 * element's last sampled instant, skipped when this is that one again, and
 * updated (Model Exchange's event iteration) */
void mbn_elements_sample(int nel, const mbn_element *el, double t, double *blk, double *done);

/* 1 if every element with discrete states has a positive, finite period */
int mbn_elements_periods_valid(int nel, const mbn_element *el);

/* State after dt (s) from e->t0 (the ode of mbn_element_ode_init), y = [v;
 * continuous states; discrete states]: mb_adapt_advance with opt, stopped at
 * every instant of the elements' grids (each interval integrated anew from
 * its start), where mbn_elements_sample runs. Returns MB_ADAPT_OK, the
 * failing call's status (stats are then that call's; q, y the last state
 * reached) or MB_ADAPT_BAD_GRID. */
int mbn_element_advance(mbn_element_ode *e, const mb_ode *ode, double *q, double *y, const double *tau, double dt,
                        const mb_adapt_options *opt, mb_adapt_stats *stats);

/* ================================================================ frame elements
 * A plant written in a frame that translates with a uniform acceleration a(t, u)
 * (a crash sled) is inertial up to it: every body gets the d'Alembert force
 * -m a at its centre of mass, which is a uniform, time-varying gravity. A frame
 * element (frame_accel set; at most one per plant, mbn_new and the binding
 * refuse a second) gives
 *   frame_accel(par, t, u, nu, a): the frame's acceleration a (3, world axes =
 *     the frame's, m/s^2) at time t (s) from the plant's inputs u (nu values, SI;
 *     the element reads those its parameters name and returns NAN for one beyond
 *     nu, never a silently wrong frame);
 *   frame_accel_tangent(par, t, u, nu, du, da): its tangent da (m/s^2) along the
 *     inputs' du (t is not a variable of the directional derivatives);
 *   frame_next_kink(par, t) (optional): the first instant after t (s) where a is
 *     not smooth in t (a pulse's start and end), INFINITY for none: Model
 *     Exchange's time events. Co-Simulation and the Python plant integrate
 *     across them with the error control (as they always have).
 * The core evaluates everything under the gravity g_f = g - a(t, u) (each
 * component where a is not zero): the right-hand side, Co-Simulation's advance,
 * Model Exchange's derivatives, the elements' accel_rate (the specific force
 * in the frame), the sensors below, and the exact tangents, whose gravity
 * tangent is -da (the input columns). a is a vector, not a scalar along an
 * axis the core would know: the crash sled's is a_s(t, u) axis, its axis one of
 * its parameters (models/sled_frame.c). A frame element acts on no body: its
 * force and tangent return zeros, and the body (1) and point its registration
 * names are unused. Its parameters sit on the tape like any element's, so they
 * stay tunable in the FMU.
 *
 * Sensors of the dynamics (kinds of mb_sensor, sensors.h; codes after the
 * engine's). They are evaluated here, not in sensors.c, because they read the
 * solved dv/dt, which the elements' forces and the frame's gravity enter, or
 * the frame itself; ACCELEROMETER, CABLE_TENSION and DISPLACEMENT are generic
 * (a plant without a frame element has them too: its gravity is the model's):
 *   ACCELEROMETER  specific force (inertial acceleration minus gravity, what a
 *                  triaxial accelerometer reads) at a point of a body, the
 *                  frame's (= world) axes, m/s^2: axis 0..2, or 3 for the
 *                  magnitude; par: point (3, body frame, m);
 *   FRAME_ACCEL    the frame element's acceleration a, world axis 0..2, m/s^2
 *                  (0 without a frame element);
 *   CABLE_TENSION  tension of cable index (N);
 *   DISPLACEMENT   world coordinate axis of a point of a body minus a
 *                  reference, m; par: point (3, body frame, m), reference (m).
 */
enum { MBN_SENS_ACCELEROMETER = 31, MBN_SENS_FRAME_ACCEL, MBN_SENS_CABLE_TENSION, MBN_SENS_DISPLACEMENT };

/* the registry's frame element (frame_accel set), or NULL */
const mbn_element *mbn_elements_frame(int nel, const mbn_element *el);

/* the number of frame elements in the registry (a plant may have one) */
int mbn_elements_nframe(int nel, const mbn_element *el);

/* g (3) = the gravity the dynamics runs under at time t (s) with inputs u (nu):
 * g0 - a(t, u) of the frame element fr (components where a != 0), or g0 when fr is
 * NULL; a (3) receives a (zeros without a frame) unless NULL */
void mbn_frame_gravity(const mbn_element *fr, double t, const double *u, int nu, const double *g0, double *g,
                       double *a);

/* 1 if kind is one of the sensors of the dynamics above */
int mbn_is_motion_sensor(int kind);

/* as mb_sensors_eval (sensors.h) at time t, with the sensors of the dynamics
 * as well, in the frame of the registry's frame element if any: the
 * accelerometers read the solved dv/dt at the generalized forces tau and the
 * elements' forces (their states s, the elements' block after [q; v], may be
 * NULL without elements); fext: (nb, 6) scratch */
void mbn_motion_sensors_eval(const mb_model *m, mb_data *ws, const mb_mass_props *mp, int nel, const mbn_element *el,
                             double t, int n, const mb_sensor *sens, const double *x, const double *v,
                             const double *s, const double *u, int nu, const double *tau, double *fext, double *out);

#endif
