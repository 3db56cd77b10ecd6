; Two cities, each with an airport and a depot; one plane, a truck per city, two packages
; bound for the other city's depot. Shortest plan: 14 steps.
(define (problem logistics-c2-p2)
  (:domain logistics-strips)
  (:objects c1 c2 l1-1 l1-2 l2-1 l2-2 t1 t2 a1 p1 p2)
  (:init
    (city c1) (city c2)
    (location l1-1) (location l1-2) (location l2-1) (location l2-2)
    (airport l1-1) (airport l2-1)
    (in-city l1-1 c1) (in-city l1-2 c1) (in-city l2-1 c2) (in-city l2-2 c2)
    (truck t1) (truck t2) (airplane a1)
    (at t1 l1-1) (at t2 l2-1) (at a1 l1-1)
    (obj p1) (obj p2)
    (at p1 l1-2) (at p2 l1-1))
  (:goal (and (at p1 l2-2) (at p2 l2-2))))
