; Three cities with an airport and a depot each, two planes, a truck per city and four
; packages spread over the map: small to write a plan for, slow to solve optimally.
(define (problem logistics-c3-p4)
  (:domain logistics-strips)
  (:objects c1 c2 c3 l1-1 l1-2 l2-1 l2-2 l3-1 l3-2 t1 t2 t3 a1 a2 p1 p2 p3 p4)
  (:init
    (city c1) (city c2) (city c3)
    (location l1-1) (location l1-2) (location l2-1) (location l2-2) (location l3-1) (location l3-2)
    (airport l1-1) (airport l2-1) (airport l3-1)
    (in-city l1-1 c1) (in-city l1-2 c1) (in-city l2-1 c2) (in-city l2-2 c2) (in-city l3-1 c3) (in-city l3-2 c3)
    (truck t1) (truck t2) (truck t3) (airplane a1) (airplane a2)
    (at t1 l1-1) (at t2 l2-2) (at t3 l3-1) (at a1 l1-1) (at a2 l3-1)
    (obj p1) (obj p2) (obj p3) (obj p4)
    (at p1 l1-2) (at p2 l2-2) (at p3 l3-2) (at p4 l2-1))
  (:goal (and (at p1 l3-2) (at p2 l1-2) (at p3 l2-2) (at p4 l1-1))))
