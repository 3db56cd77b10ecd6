; Blocksworld with four operators, written for veriloop.
; One hand moves one block at a time between the table and the tops of towers.
; The names (domain, predicates, actions) are the ones PlanBench's problem files use,
; so those problems can be read against this file.
(define (domain blocksworld-4ops)
  (:requirements :strips)
  (:predicates
    (clear ?b)        ; nothing is on ?b and the hand is not holding it
    (ontable ?b)
    (handempty)
    (holding ?b)
    (on ?b ?below))

  ; take a clear block off the table
  (:action pick-up
    :parameters (?b)
    :precondition (and (clear ?b) (ontable ?b) (handempty))
    :effect (and (holding ?b)
                 (not (clear ?b)) (not (ontable ?b)) (not (handempty))))

  ; set the held block down on the table
  (:action put-down
    :parameters (?b)
    :precondition (holding ?b)
    :effect (and (ontable ?b) (clear ?b) (handempty)
                 (not (holding ?b))))

  ; set the held block on top of a clear block
  (:action stack
    :parameters (?b ?below)
    :precondition (and (holding ?b) (clear ?below))
    :effect (and (on ?b ?below) (clear ?b) (handempty)
                 (not (holding ?b)) (not (clear ?below))))

  ; lift a clear block off the block it sits on
  (:action unstack
    :parameters (?b ?below)
    :precondition (and (on ?b ?below) (clear ?b) (handempty))
    :effect (and (holding ?b) (clear ?below)
                 (not (on ?b ?below)) (not (clear ?b)) (not (handempty)))))
